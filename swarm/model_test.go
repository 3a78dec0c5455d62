package swarm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestSlidingCacheBytes checks which blocks slide and how many cache bytes
// they need: a Gemma 3 style pattern of 6 (blocks 5, 11, ... global), a
// Mistral v0.1 style window on every block (pattern 0) and a model
// without a window. 100 bytes per token per block throughout.
func TestSlidingCacheBytes(t *testing.T) {
	gemma := swarm.ModelInfo{CacheBytesPerToken: 100, SlidingWindow: 512, SlidingPattern: 6, NBlocks: 12}
	mistral := swarm.ModelInfo{CacheBytesPerToken: 100, SlidingWindow: 4096, NBlocks: 4}
	llama := swarm.ModelInfo{CacheBytesPerToken: 100, NBlocks: 4}
	for _, c := range []struct {
		name      string
		info      swarm.ModelInfo
		block     int
		maxLength int
		sliding   bool
		want      int64
	}{
		{"gemma first local", gemma, 0, 2048, true, 51200},
		{"gemma last local before global", gemma, 4, 2048, true, 51200},
		{"gemma global", gemma, 5, 2048, false, 204800},
		{"gemma local after global", gemma, 6, 2048, true, 51200},
		{"gemma second global", gemma, 11, 2048, false, 204800},
		{"gemma local shorter than window", gemma, 0, 100, true, 10000},
		{"gemma local exactly window", gemma, 1, 512, true, 51200},
		{"mistral all sliding", mistral, 3, 10000, true, 409600},
		{"mistral short session", mistral, 0, 10, true, 1000},
		{"llama no window", llama, 2, 10000, false, 1000000},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.sliding, c.info.IsSliding(c.block))
			require.Equal(t, c.want, c.info.BlockCacheBytes(c.block, c.maxLength))
		})
	}
	for _, c := range []struct {
		name      string
		info      swarm.ModelInfo
		span      swarm.Span
		maxLength int
		want      int64
	}{
		// 5 local blocks of 512 tokens + 1 global of 2048.
		{"gemma first six", gemma, swarm.Span{Start: 0, End: 6}, 2048, 5*51200 + 204800},
		{"gemma globals only straddled", gemma, swarm.Span{Start: 5, End: 7}, 2048, 204800 + 51200},
		{"gemma whole", gemma, gemma.Blocks(), 1000, 10*51200 + 2*100000},
		{"gemma short sessions equal full", gemma, gemma.Blocks(), 300, 12 * 30000},
		{"llama span", llama, swarm.Span{Start: 1, End: 3}, 7, 1400},
		{"empty span", llama, swarm.Span{Start: 2, End: 2}, 7, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.info.SpanCacheBytes(c.span, c.maxLength))
		})
	}
}

// TestValidateSliding rejects negative window and pattern values.
func TestValidateSliding(t *testing.T) {
	ok := swarm.ModelInfo{NBlocks: 1, DModel: 8, NHeads: 2, NKVHeads: 1, HeadDim: 4, FFNDim: 8, Vocab: 10, NormEps: 1e-6, RopeTheta: 1e4,
		SlidingWindow: 4, SlidingPattern: 2}
	require.NoError(t, ok.Validate())
	bad := ok
	bad.SlidingWindow = -1
	require.ErrorIs(t, bad.Validate(), swarm.ErrBadModel)
	bad = ok
	bad.SlidingPattern = -6
	require.ErrorIs(t, bad.Validate(), swarm.ErrBadModel)
}
