package tokenizer

import (
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
)

// Split patterns of the byte-level BPE families, as their tokenizer.json
// files spell them (Hugging Face tokenizers' Split pre-tokenizer; llama.cpp
// selects the same by tokenizer.ggml.pre). They need look-ahead ("\s+(?!\S)"
// keeps the last space of a run for the next word), which Go's regexp
// lacks; github.com/dlclark/regexp2 runs them.
const (
	// gpt2Pattern is GPT-2's, which the ByteLevel pre-tokenizer applies
	// when its use_regex is on.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// llama3Pattern is Llama 3's (tiktoken's cl100k_base): case-insensitive
	// contractions, numbers in groups of up to three digits.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwen2Pattern is Qwen2's and Qwen3's: Llama 3's with single digits.
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// pattern is what a Split pre-tokenizer or a Replace normalizer looks for:
// a literal string or a regular expression. Regular expressions run with
// regexp2's default (.NET) semantics, which match those of Hugging Face
// tokenizers (Oniguruma) and tiktoken for the patterns above: \s is
// Unicode White_Space (with U+0085, without U+FEFF; JavaScript, and so
// transformers.js, has it the other way round), \p{L} and \p{N} are the
// Unicode categories of Go's unicode tables.
type pattern struct {
	literal string
	re      *regexp2.Regexp // nil for a literal
}

func literalPattern(s string) (pattern, error) {
	if s == "" {
		return pattern{}, fmt.Errorf("%w: empty split pattern", ErrFormat)
	}
	return pattern{literal: s}, nil
}

func regexPattern(expr string) (pattern, error) {
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return pattern{}, fmt.Errorf("%w: regular expression %q: %w", ErrFormat, expr, err)
	}
	return pattern{re: re}, nil
}

// find returns the byte ranges [start, end) of the non-empty,
// non-overlapping matches of p in s, left to right.
func (p pattern) find(s string) ([][2]int, error) {
	var out [][2]int
	if p.re == nil {
		for i := 0; ; {
			j := strings.Index(s[i:], p.literal)
			if j < 0 {
				return out, nil
			}
			out = append(out, [2]int{i + j, i + j + len(p.literal)})
			i += j + len(p.literal)
		}
	}
	runes := []rune(s)
	offsets := make([]int, 0, len(runes)+1) // byte offset of each rune index
	for i := range s {
		offsets = append(offsets, i)
	}
	offsets = append(offsets, len(s))
	m, err := p.re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = p.re.FindNextMatch(m) {
		if m.Length > 0 {
			out = append(out, [2]int{offsets[m.Index], offsets[m.Index+m.Length]})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: pattern %s: %w", ErrEncode, p.re, err)
	}
	return out, nil
}

// preTokenizer splits normalized text into words; BPE merges never cross
// a word boundary.
type preTokenizer interface {
	// split appends the words of s to dst.
	split(dst []string, s string) ([]string, error)
}

// splitBehavior is what Split does with the parts its pattern matched
// (Hugging Face tokenizers' SplitDelimiterBehavior).
type splitBehavior int

const (
	splitRemoved            splitBehavior = iota // matches are dropped
	splitIsolated                                // every part is a word
	splitMergedWithPrevious                      // a match joins the part before it
	splitMergedWithNext                          // a match joins the part after it
	splitContiguous                              // consecutive matches form one word
)

var splitBehaviors = map[string]splitBehavior{
	"Removed":            splitRemoved,
	"Isolated":           splitIsolated,
	"MergedWithPrevious": splitMergedWithPrevious,
	"MergedWithNext":     splitMergedWithNext,
	"Contiguous":         splitContiguous,
}

// splitPre is the Split pre-tokenizer with Hugging Face tokenizers'
// semantics (transformers.js treats every behavior but Removed as Isolated
// and keeps only the matches when inverted; the files this package is
// tested with use Isolated, or a pattern that never matches).
type splitPre struct {
	pat      pattern
	behavior splitBehavior
	invert   bool // the pattern matches the words, not the delimiters
}

func (p splitPre) split(dst []string, s string) ([]string, error) {
	found, err := p.pat.find(s)
	if err != nil {
		return nil, err
	}
	type part struct {
		start, end int
		match      bool
	}
	parts := make([]part, 0, 2*len(found)+1)
	prev := 0
	for _, m := range found {
		if m[0] > prev {
			parts = append(parts, part{prev, m[0], p.invert})
		}
		parts = append(parts, part{m[0], m[1], !p.invert})
		prev = m[1]
	}
	if prev < len(s) {
		parts = append(parts, part{prev, len(s), p.invert})
	}
	var words []part
	switch p.behavior {
	case splitRemoved:
		for _, q := range parts {
			if !q.match {
				words = append(words, q)
			}
		}
	case splitIsolated:
		words = parts
	case splitMergedWithPrevious:
		for i, q := range parts {
			if q.match && i > 0 && !parts[i-1].match {
				words[len(words)-1].end = q.end
				continue
			}
			words = append(words, q)
		}
	case splitMergedWithNext:
		for i := 0; i < len(parts); i++ {
			q := parts[i]
			if q.match && i+1 < len(parts) && !parts[i+1].match {
				q.end = parts[i+1].end
				i++
			}
			words = append(words, q)
		}
	case splitContiguous:
		for i, q := range parts {
			if q.match && i > 0 && parts[i-1].match {
				words[len(words)-1].end = q.end
				continue
			}
			words = append(words, q)
		}
	}
	for _, w := range words {
		dst = append(dst, s[w.start:w.end])
	}
	return dst, nil
}

// byteLevelPre is the ByteLevel pre-tokenizer: optionally a space before
// each part that lacks one, optionally GPT-2's split, then each word
// spelled in the byte-level alphabet (bytelevel.go).
type byteLevelPre struct {
	addPrefixSpace bool
	gpt2           *splitPre // nil unless use_regex
}

func (p byteLevelPre) split(dst []string, s string) ([]string, error) {
	if p.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	n := len(dst)
	if p.gpt2 == nil {
		dst = append(dst, s)
	} else {
		var err error
		if dst, err = p.gpt2.split(dst, s); err != nil {
			return nil, err
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = toByteLevel(dst[i])
	}
	return dst, nil
}

func newByteLevelPre(addPrefixSpace, useRegex bool) (byteLevelPre, error) {
	p := byteLevelPre{addPrefixSpace: addPrefixSpace}
	if useRegex {
		pat, err := regexPattern(gpt2Pattern)
		if err != nil {
			return byteLevelPre{}, err
		}
		p.gpt2 = &splitPre{pat: pat, behavior: splitIsolated}
	}
	return p, nil
}

// preSequence applies pre-tokenizers in order, each to every word of the
// one before.
type preSequence []preTokenizer

func (seq preSequence) split(dst []string, s string) ([]string, error) {
	words := []string{s}
	for _, p := range seq {
		var next []string
		for _, w := range words {
			var err error
			if next, err = p.split(next, w); err != nil {
				return nil, err
			}
		}
		words = next
	}
	return append(dst, words...), nil
}
