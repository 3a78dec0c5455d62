package blocks_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

func tinyModel(t *testing.T) loaded {
	t.Helper()
	return load(t, synthFiles(t, smallConfig(swarm.DTypeF32))["gguf"])
}

// TestSessionReplay truncates the caches by calling Forward at an earlier
// position (replay after failover) and requires the same hidden states as
// the first time.
func TestSessionReplay(t *testing.T) {
	l := tinyModel(t)
	d := l.head.Info().DModel
	x, err := l.head.Embed(testTokens)
	require.NoError(t, err)
	n := len(testTokens)
	s, err := l.engine.NewSession(l.engine.Span(), n)
	require.NoError(t, err)
	want, err := s.Forward(context.Background(), 0, x, n)
	require.NoError(t, err)
	require.Equal(t, n, s.Len())

	// Replay positions 4.. one at a time, then 6.. in one call.
	for pos := 4; pos < n; pos++ {
		got, err := s.Forward(context.Background(), pos, x[pos*d:(pos+1)*d], 1)
		require.NoError(t, err)
		require.Equal(t, pos+1, s.Len())
		require.Equal(t, want[pos*d:(pos+1)*d], got)
	}
	got, err := s.Forward(context.Background(), 6, x[6*d:], n-6)
	require.NoError(t, err)
	require.Equal(t, want[6*d:], got)

	// A different token at position 3 changes what follows; replaying the
	// original again restores it.
	other, err := l.head.Embed([]int{99})
	require.NoError(t, err)
	_, err = s.Forward(context.Background(), 3, other, 1)
	require.NoError(t, err)
	require.Equal(t, 4, s.Len())
	changed, err := s.Forward(context.Background(), 4, x[4*d:5*d], 1)
	require.NoError(t, err)
	require.NotEqual(t, want[4*d:5*d], changed)
	got, err = s.Forward(context.Background(), 3, x[3*d:], n-3)
	require.NoError(t, err)
	require.Equal(t, want[3*d:], got)
}

// TestConcurrentSessions runs sessions with different inputs at the same
// time on one engine (run with -race) and compares each with a run alone.
func TestConcurrentSessions(t *testing.T) {
	l := tinyModel(t)
	const sessions = 4
	inputs := make([][]float32, sessions)
	want := make([][]float32, sessions)
	for i := range sessions {
		toks := []int{1, 10 + i, 20 + i, 30 + i, 40 + i}
		var err error
		inputs[i], err = l.head.Embed(toks)
		require.NoError(t, err)
		s, err := l.engine.NewSession(l.engine.Span(), len(toks))
		require.NoError(t, err)
		want[i], err = s.Forward(context.Background(), 0, inputs[i], len(toks))
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	got := make([][]float32, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			s, err := l.engine.NewSession(l.engine.Span(), 5)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			d := l.head.Info().DModel
			for pos := range 5 { // decode steps interleave across goroutines
				y, err := s.Forward(context.Background(), pos, inputs[i][pos*d:(pos+1)*d], 1)
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], y...)
			}
		})
	}
	wg.Wait()
	for i := range sessions {
		require.NoError(t, errs[i])
		require.Equal(t, want[i], got[i], "session %d", i)
	}
}

// TestSessionErrors checks the documented errors of NewSession and Forward.
func TestSessionErrors(t *testing.T) {
	l := tinyModel(t)
	info := l.head.Info()
	d := info.DModel
	one := make([]float32, d)

	_, err := l.engine.NewSession(swarm.Span{Start: 1, End: 5}, 8)
	require.ErrorIs(t, err, blocks.ErrArgument)
	_, err = l.engine.NewSession(swarm.Span{Start: 1, End: 1}, 8)
	require.ErrorIs(t, err, blocks.ErrArgument)
	_, err = l.engine.NewSession(l.engine.Span(), 0)
	require.ErrorIs(t, err, blocks.ErrArgument)
	_, err = l.engine.NewSession(l.engine.Span(), info.MaxSeqLen+1)
	require.ErrorIs(t, err, blocks.ErrArgument)

	s, err := l.engine.NewSession(swarm.Span{Start: 1, End: 3}, 4)
	require.NoError(t, err)
	require.Equal(t, swarm.Span{Start: 1, End: 3}, s.Span())
	// 2 blocks * 4 positions * (K and V) * 2 KV heads * head size 16 * 4 bytes.
	require.Equal(t, int64(2*4*2*2*16*4), s.CacheBytes())

	tests := []struct {
		name    string
		pos, n  int
		hidden  []float32
		wantErr error
	}{
		{"position past the cache", 1, 1, one, blocks.ErrPosition},
		{"negative position", -1, 1, one, blocks.ErrPosition},
		{"wrong hidden length", 0, 2, one, blocks.ErrArgument},
		{"zero tokens", 0, 0, nil, blocks.ErrArgument},
		{"past max length", 0, 5, make([]float32, 5*d), blocks.ErrPosition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Forward(context.Background(), tt.pos, tt.hidden, tt.n)
			require.ErrorIs(t, err, tt.wantErr)
			require.Equal(t, 0, s.Len(), "a failed Forward leaves the caches alone")
		})
	}
	_, err = s.Forward(context.Background(), 0, make([]float32, 4*d), 4)
	require.NoError(t, err)
	_, err = s.Forward(context.Background(), 4, one, 1)
	require.ErrorIs(t, err, blocks.ErrPosition)

	require.NoError(t, s.Close())
	_, err = s.Forward(context.Background(), 0, one, 1)
	require.ErrorIs(t, err, blocks.ErrClosed)
	require.ErrorIs(t, s.Close(), blocks.ErrClosed)

	// Closing the engine fails its open sessions and new ones.
	s2, err := l.engine.NewSession(l.engine.Span(), 4)
	require.NoError(t, err)
	require.NoError(t, l.engine.Close())
	_, err = s2.Forward(context.Background(), 0, one, 1)
	require.ErrorIs(t, err, blocks.ErrClosed)
	_, err = l.engine.NewSession(l.engine.Span(), 4)
	require.ErrorIs(t, err, blocks.ErrClosed)
}

// TestHeadErrors checks the documented errors of Embed and Logits.
func TestHeadErrors(t *testing.T) {
	l := tinyModel(t)
	_, err := l.head.Embed([]int{0, 320})
	require.ErrorIs(t, err, blocks.ErrArgument)
	_, err = l.head.Embed([]int{-1})
	require.ErrorIs(t, err, blocks.ErrArgument)
	_, err = l.head.Logits(make([]float32, 3))
	require.ErrorIs(t, err, blocks.ErrArgument)
	_, err = l.model.LoadSpan(swarm.Span{Start: 2, End: 4})
	require.ErrorIs(t, err, swarm.ErrBadSpan)
	require.NoError(t, l.model.Close())
	_, err = l.model.LoadSpan(swarm.Span{Start: 0, End: 1})
	require.ErrorIs(t, err, blocks.ErrClosed)
}
