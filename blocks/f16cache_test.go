package blocks_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/swarm"
)

// loadWith is load with backend b instead of the default CPU backend.
func loadWith(t *testing.T, b blocks.Backend, path string) loaded {
	t.Helper()
	m, err := blocks.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	e, err := m.LoadSpanWith(b, m.Info().Blocks())
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	h, err := m.LoadHead()
	require.NoError(t, err)
	return loaded{model: m, engine: e, head: h}
}

func f16Backend(t *testing.T) blocks.Backend {
	t.Helper()
	b, err := blocks.WithCacheDType(blocks.CPU(), swarm.DTypeF16)
	require.NoError(t, err)
	require.Equal(t, swarm.DTypeF16, b.CacheDType())
	return b
}

// decodeLogits runs tokens one position at a time through a fresh session
// and returns the logits at every position.
func decodeLogits(t *testing.T, l loaded, tokens []int) [][]float32 {
	t.Helper()
	s, err := l.engine.NewSession(l.engine.Span(), len(tokens))
	require.NoError(t, err)
	defer s.Close()
	out := make([][]float32, len(tokens))
	for p, tok := range tokens {
		x, err := l.head.Embed([]int{tok})
		require.NoError(t, err)
		y, err := s.Forward(context.Background(), p, x, 1)
		require.NoError(t, err)
		out[p], err = l.head.Logits(y)
		require.NoError(t, err)
	}
	return out
}

// f16CacheTolerance bounds |logit(f16 cache) - logit(f32 cache)| on these
// models: keys and values rounded to binary16 carry a relative error of at
// most 2^-11 each; through the small models' few blocks the logits move by
// well under 1% of their spread (measured: 0.010 on stories260K, whose
// logits span about 30, and 0.0017 on the gemma3 model).
const f16CacheTolerance = 0.02

// TestF16CacheCloseToF32 runs stories260K (full caches) and a gemma3 model
// with an 8-token sliding window (ring caches) with float32 and float16
// attention caches: the f16 cache's logits lie within f16CacheTolerance of
// the f32 cache's with the same greedy token at every position, its
// sessions take half the bytes (2 * NKVHeads * HeadDim * 2 per block and
// token), and its prefill and decode agree bit for bit.
func TestF16CacheCloseToF32(t *testing.T) {
	ring := archConfig(synth.ArchGemma3, swarm.DTypeF32)
	ring.Layers, ring.SlidingWindow, ring.SlidingPattern = 4, 8, 2
	ringPath := filepath.Join(t.TempDir(), "ring.gguf")
	require.NoError(t, synth.WriteGGUF(ringPath, ring))
	ref := stories260KReference(t)
	cases := []struct {
		name   string
		path   string
		tokens []int
	}{
		{"stories260K", testenv.SharedFile(t, "models", "stories260K", "stories260K.bin"), ref.ids[:48]},
		{"gemma3 sliding", ringPath, append(append([]int{}, testTokens...), testTokens...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f32 := loadWith(t, blocks.CPU(), tc.path)
			f16 := loadWith(t, f16Backend(t), tc.path)
			info := f32.model.Info()
			kv := int64(info.NKVHeads * info.HeadDim)
			require.Equal(t, 2*kv*4, f32.engine.Info().CacheBytesPerToken)
			require.Equal(t, 2*kv*2, f16.engine.Info().CacheBytesPerToken)
			s32, err := f32.engine.NewSession(f32.engine.Span(), len(tc.tokens))
			require.NoError(t, err)
			s16, err := f16.engine.NewSession(f16.engine.Span(), len(tc.tokens))
			require.NoError(t, err)
			require.Equal(t, s32.CacheBytes(), 2*s16.CacheBytes())
			s32.Close()
			s16.Close()

			want := logitsOf(t, f32, tc.tokens)
			got := logitsOf(t, f16, tc.tokens)
			worst := 0.0
			for p := range want {
				for i := range want[p] {
					worst = max(worst, math.Abs(float64(got[p][i]-want[p][i])))
				}
				require.Equal(t, argmax32(want[p]), argmax32(got[p]), "greedy token at position %d", p)
			}
			t.Logf("%s: max |logit f16 cache - f32 cache| = %.3g", tc.name, worst)
			require.LessOrEqual(t, worst, f16CacheTolerance)
			require.Positive(t, worst, "an f16 cache that changes nothing is not an f16 cache")
			require.Equal(t, got, decodeLogits(t, f16, tc.tokens), "f16 cache: prefill and decode must agree bit for bit")
		})
	}
}

func argmax32(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// TestCacheDTypeChoice checks WithCacheDType: the CPU backend takes f32 and
// f16 and refuses others.
func TestCacheDTypeChoice(t *testing.T) {
	b, err := blocks.WithCacheDType(blocks.CPU(), swarm.DTypeF32)
	require.NoError(t, err)
	require.Equal(t, swarm.DTypeF32, b.CacheDType())
	_, err = blocks.WithCacheDType(blocks.CPU(), swarm.DTypeQ8_0)
	require.ErrorIs(t, err, blocks.ErrArgument)
}
