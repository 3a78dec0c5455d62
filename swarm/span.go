package swarm

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrBadSpan is returned (wrapped) when a span is empty, negative or outside
// the model's blocks.
var ErrBadSpan = errors.New("swarm: bad span")

// Span is a half-open range of block indices [Start, End), 0-based.
//
// The paper (003, Sec. 3.1) writes a server's span 1-based as
// {a_j, ..., a_j + m_j - 1}; in code a_j = Start+1 and m_j = End-Start.
type Span struct {
	// Start is the first block of the span (0-based, inclusive).
	Start int `json:"start"`
	// End is one past the last block of the span (exclusive).
	End int `json:"end"`
}

// Len returns the number of blocks in the span (m_j in the paper).
func (s Span) Len() int { return s.End - s.Start }

// Empty reports whether the span holds no block.
func (s Span) Empty() bool { return s.End <= s.Start }

// Contains reports whether block b lies in the span.
func (s Span) Contains(b int) bool { return b >= s.Start && b < s.End }

// ContainsSpan reports whether o lies entirely inside s.
func (s Span) ContainsSpan(o Span) bool { return o.Start >= s.Start && o.End <= s.End }

// Intersect returns the blocks common to s and o (possibly empty).
func (s Span) Intersect(o Span) Span {
	r := Span{Start: max(s.Start, o.Start), End: min(s.End, o.End)}
	if r.End < r.Start {
		r.End = r.Start
	}
	return r
}

// String formats the span as "START:END", the CLI and JSON notation.
func (s Span) String() string { return fmt.Sprintf("%d:%d", s.Start, s.End) }

// Validate checks that the span is non-empty and lies within a model of
// nBlocks blocks. It returns an error wrapping ErrBadSpan otherwise.
func (s Span) Validate(nBlocks int) error {
	switch {
	case s.Start < 0:
		return fmt.Errorf("%w: %s starts below block 0", ErrBadSpan, s)
	case s.End <= s.Start:
		return fmt.Errorf("%w: %s is empty (want START < END)", ErrBadSpan, s)
	case nBlocks > 0 && s.End > nBlocks:
		return fmt.Errorf("%w: %s ends past the model's %d blocks", ErrBadSpan, s, nBlocks)
	}
	return nil
}

// ParseSpan parses "START:END" (0-based, half-open: "0:2" is blocks 0 and 1).
// It checks only the syntax and START < END; use Validate against a model.
func ParseSpan(text string) (Span, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(text), ":")
	if !ok {
		return Span{}, fmt.Errorf("%w: %q: want START:END, e.g. 0:2", ErrBadSpan, text)
	}
	start, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return Span{}, fmt.Errorf("%w: %q: START is not an integer", ErrBadSpan, text)
	}
	end, err := strconv.Atoi(strings.TrimSpace(b))
	if err != nil {
		return Span{}, fmt.Errorf("%w: %q: END is not an integer", ErrBadSpan, text)
	}
	s := Span{Start: start, End: end}
	if err := s.Validate(0); err != nil {
		return Span{}, err
	}
	return s, nil
}

// Uncovered returns the blocks of need that none of spans hosts, as maximal
// spans in increasing order: empty when spans cover every block of need.
// Parts of spans outside need are ignored; spans may overlap and come in
// any order. (A chain through need exists only if this is empty: paper 003
// Lemma 3.1.)
func Uncovered(spans []Span, need Span) []Span {
	clipped := make([]Span, 0, len(spans))
	for _, s := range spans {
		if c := s.Intersect(need); !c.Empty() {
			clipped = append(clipped, c)
		}
	}
	slices.SortFunc(clipped, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	var gaps []Span
	next := need.Start
	for _, s := range clipped {
		if s.Start > next {
			gaps = append(gaps, Span{Start: next, End: s.Start})
		}
		next = max(next, s.End)
	}
	if next < need.End {
		gaps = append(gaps, Span{Start: next, End: need.End})
	}
	return gaps
}
