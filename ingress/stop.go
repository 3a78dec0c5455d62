package ingress

import (
	"strings"
	"unicode/utf8"
)

// stopper cuts generated text at the first stop sequence and never lets the
// stop text out: it holds back the longest tail of the text that could
// still grow into a stop sequence (a stop sequence split across tokens),
// and an incomplete UTF-8 character at the end (a byte-fallback token
// <0xXX> may carry part of a character), so every piece it releases is
// final, valid UTF-8 text.
type stopper struct {
	stops []string
	held  string
	done  bool
}

// newStopper returns a stopper for the non-empty stop sequences.
func newStopper(stops []string) *stopper {
	s := &stopper{}
	for _, x := range stops {
		if x != "" {
			s.stops = append(s.stops, x)
		}
	}
	return s
}

// push adds a piece of generated text and returns the text that can be
// released now, and whether a stop sequence matched (then the returned text
// is everything before the match, and the generation must end).
func (s *stopper) push(piece string) (string, bool) {
	if s.done {
		return "", true
	}
	buf := s.held + piece
	cut := -1
	for _, x := range s.stops {
		if i := strings.Index(buf, x); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		s.done, s.held = true, ""
		return buf[:cut], true
	}
	keep := 0
	for _, x := range s.stops {
		for n := min(len(x)-1, len(buf)); n > keep; n-- {
			if strings.HasSuffix(buf, x[:n]) {
				keep = n
				break
			}
		}
	}
	keep = max(keep, partialRune(buf))
	s.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush releases what is held at the end of the generation (a stop
// sequence that never completed is ordinary text; an incomplete UTF-8
// character becomes U+FFFD when encoded).
func (s *stopper) flush() string {
	h := s.held
	s.held = ""
	return h
}

// partialRune returns the length of an incomplete UTF-8 sequence at the end
// of s (0 if s ends with a complete character or invalid bytes that can
// never complete).
func partialRune(s string) int {
	for n := 1; n <= min(utf8.UTFMax-1, len(s)); n++ {
		b := s[len(s)-n]
		if utf8.RuneStart(b) {
			if !utf8.FullRuneInString(s[len(s)-n:]) {
				return n
			}
			return 0
		}
	}
	return 0
}
