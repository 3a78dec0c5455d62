package ingress

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStopper feeds pieces one by one and checks what is released at each
// step, that the stop text never comes out, and the final flush.
func TestStopper(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		pieces  []string
		want    []string // released after each piece
		matched int      // index of the piece that matches, -1 for none
		flush   string
	}{
		{"no stops", nil, []string{"Once", " upon"}, []string{"Once", " upon"}, -1, ""},
		{"stop inside a piece", []string{"Lily"}, []string{"a girl named Lily. She"}, []string{"a girl named "}, 0, ""},
		{"stop split across pieces", []string{"Lily."}, []string{"named L", "il", "y. She"}, []string{"named ", "", ""}, 2, ""},
		{"prefix that does not complete", []string{"Lily."}, []string{"named L", "il", "ac"}, []string{"named ", "", "Lilac"}, -1, ""},
		{"held at the end is flushed", []string{"END"}, []string{"the E", "N"}, []string{"the ", ""}, -1, "EN"},
		{"earliest of several stops", []string{"park", "\n"}, []string{"in the park.\nOne"}, []string{"in the "}, 0, ""},
		{"stop at the very start", []string{"Once"}, []string{"Once upon"}, []string{""}, 0, ""},
		{"split UTF-8 character held", nil, []string{"caf\xc3", "\xa9!"}, []string{"caf", "\u00e9!"}, -1, ""},
		{"three-byte character in three pieces", nil, []string{"\xe2", "\x82", "\xac"}, []string{"", "", "\u20ac"}, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStopper(tt.stops)
			matched := -1
			for i, p := range tt.pieces {
				out, m := s.push(p)
				require.Equal(t, tt.want[i], out, "piece %d", i)
				for _, x := range tt.stops {
					require.NotContains(t, out, x)
				}
				if m {
					matched = i
					break
				}
			}
			require.Equal(t, tt.matched, matched)
			require.Equal(t, tt.flush, s.flush())
		})
	}
}

// TestStopperNeverLeaksStopText checks every way of splitting a text into
// two pieces around a stop sequence.
func TestStopperNeverLeaksStopText(t *testing.T) {
	text := "She said, \"I want to play with your ball, but I can't find it.\""
	stop := "your ball"
	want := text[:strings.Index(text, stop)]
	for i := 0; i <= len(text); i++ {
		s := newStopper([]string{stop})
		a, m1 := s.push(text[:i])
		got := a
		if !m1 {
			b, m2 := s.push(text[i:])
			got += b
			require.True(t, m2, "split at %d", i)
		}
		require.Equal(t, want, got, "split at %d", i)
	}
}
