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
