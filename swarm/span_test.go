package swarm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSpan(t *testing.T) {
	tests := []struct {
		in      string
		want    Span
		wantErr bool
	}{
		{in: "0:2", want: Span{0, 2}},
		{in: " 3 : 5 ", want: Span{3, 5}},
		{in: "2:2", wantErr: true},
		{in: "3:1", wantErr: true},
		{in: "-1:2", wantErr: true},
		{in: "a:2", wantErr: true},
		{in: "2", wantErr: true},
		{in: "1:b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSpan(tt.in)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrBadSpan)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, got, must(ParseSpan(got.String())))
		})
	}
}

func must(s Span, err error) Span {
	if err != nil {
		panic(err)
	}
	return s
}

func TestSpanOps(t *testing.T) {
	s := Span{2, 5}
	require.Equal(t, 3, s.Len())
	require.True(t, s.Contains(2))
	require.False(t, s.Contains(5))
	require.True(t, s.ContainsSpan(Span{3, 5}))
	require.False(t, s.ContainsSpan(Span{1, 3}))
	require.Equal(t, Span{3, 5}, s.Intersect(Span{3, 9}))
	require.True(t, s.Intersect(Span{6, 9}).Empty())
	require.ErrorIs(t, s.Validate(4), ErrBadSpan)
	require.NoError(t, s.Validate(5))
}

func TestUncovered(t *testing.T) {
	tests := []struct {
		name  string
		spans []Span
		need  Span
		want  []Span
	}{
		{"nothing hosts anything", nil, Span{0, 5}, []Span{{0, 5}}},
		{"exact cover", []Span{{0, 2}, {2, 5}}, Span{0, 5}, nil},
		{"overlapping, unsorted", []Span{{3, 5}, {0, 4}}, Span{0, 5}, nil},
		{"gap in the middle and at the end", []Span{{0, 2}, {3, 4}}, Span{0, 6}, []Span{{2, 3}, {4, 6}}},
		{"gap at the start", []Span{{2, 5}}, Span{0, 5}, []Span{{0, 2}}},
		{"spans outside need are ignored", []Span{{0, 3}, {8, 9}}, Span{3, 6}, []Span{{3, 6}}},
		{"sub-span of a failover", []Span{{0, 4}, {5, 9}}, Span{3, 6}, []Span{{4, 5}}},
		{"a span past the model's end", []Span{{0, 9}}, Span{0, 5}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Uncovered(tt.spans, tt.need))
		})
	}
}
