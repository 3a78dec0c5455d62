package blocks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/swarm"
)

// stories260K is Karpathy's trained model in both files of
// ../shared/models/stories260K; the llama2.c checkpoint needs tok512.bin.
func stories260K(t *testing.T) map[string]loaded {
	t.Helper()
	bin := testenv.SharedFile(t, "models", "stories260K", "stories260K.bin")
	tok := testenv.SharedFile(t, "models", "stories260K", "tok512.bin")
	gguf := testenv.SharedFile(t, "models", "stories260K", "stories260K.gguf")
	return map[string]loaded{
		"llama2c": load(t, bin, blocks.WithTokenizer(tok)),
		"gguf":    load(t, gguf),
	}
}

// TestStories260KGreedyIDs decodes greedily one token at a time, as run.c
// does, and compares with REFERENCE.md section 3: the 256 ids of section 1's
// text and the first five logits at position 0.
func TestStories260KGreedyIDs(t *testing.T) {
	ref := stories260KReference(t)
	for name, l := range stories260K(t) {
		t.Run(name, func(t *testing.T) {
			s, err := l.engine.NewSession(l.engine.Span(), 256)
			require.NoError(t, err)
			defer s.Close()
			tok := l.head.Info().BOS
			var ids []int
			for pos := range 256 {
				x, err := l.head.Embed([]int{tok})
				require.NoError(t, err)
				y, err := s.Forward(context.Background(), pos, x, 1)
				require.NoError(t, err)
				logits, err := l.head.Logits(y)
				require.NoError(t, err)
				if pos == 0 {
					require.InDeltaSlice(t, ref.logits, logits[:5], 1e-5)
				}
				best := 0
				for i, v := range logits {
					if v > logits[best] {
						best = i
					}
				}
				ids = append(ids, best)
				tok = best
			}
			require.Equal(t, ref.ids, ids)
		})
	}
}

// TestStories260KGenerateText runs blocks.Generate (prefill of BOS, greedy,
// 200 tokens) and decodes with the model's tokenizer: the text must be
// REFERENCE.md section 2 byte for byte (llama2.c's test_all.py).
func TestStories260KGenerateText(t *testing.T) {
	ref := stories260KReference(t)
	for name, l := range stories260K(t) {
		t.Run(name, func(t *testing.T) {
			tok := l.head.Tokenizer()
			require.NotNil(t, tok)
			prompt, err := tok.Encode("", true)
			require.NoError(t, err)
			require.Equal(t, []int{1}, prompt)
			s, err := l.engine.NewSession(l.engine.Span(), 200)
			require.NoError(t, err)
			defer s.Close()
			sampler, err := blocks.NewSampler(blocks.SamplerConfig{})
			require.NoError(t, err)
			var text strings.Builder
			ids, err := blocks.Generate(context.Background(), l.head, s, prompt, 200, sampler, func(prev, next int) error {
				text.WriteString(tok.Decode(prev, next))
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, ref.ids[:200], ids)
			require.Equal(t, ref.text, text.String())
		})
	}
}

// TestPrefillEqualsDecode checks that one Forward over n tokens (the
// matrix-matrix path) gives bit-identical hidden states to n single-token
// Forward calls.
func TestPrefillEqualsDecode(t *testing.T) {
	ref := stories260KReference(t)
	l := stories260K(t)["llama2c"]
	tokens := append([]int{1}, ref.ids[:40]...)
	d := l.head.Info().DModel
	x, err := l.head.Embed(tokens)
	require.NoError(t, err)

	pre, err := l.engine.NewSession(l.engine.Span(), len(tokens))
	require.NoError(t, err)
	yAll, err := pre.Forward(context.Background(), 0, x, len(tokens))
	require.NoError(t, err)
	require.Equal(t, len(tokens), pre.Len())

	dec, err := l.engine.NewSession(l.engine.Span(), len(tokens))
	require.NoError(t, err)
	for i := range tokens {
		y, err := dec.Forward(context.Background(), i, x[i*d:(i+1)*d], 1)
		require.NoError(t, err)
		require.Equal(t, yAll[i*d:(i+1)*d], y, "position %d", i)
	}
}

// TestStories260KInfo checks the ModelInfo read from both files against the
// architecture documented in SOURCE.md.
func TestStories260KInfo(t *testing.T) {
	for name, l := range stories260K(t) {
		t.Run(name, func(t *testing.T) {
			info := l.model.Info()
			require.Equal(t, "stories260K", info.Name)
			require.Equal(t, 5, info.NBlocks)
			require.Equal(t, 64, info.DModel)
			require.Equal(t, 8, info.NHeads)
			require.Equal(t, 4, info.NKVHeads)
			require.Equal(t, 8, info.HeadDim)
			require.Equal(t, 172, info.FFNDim)
			require.Equal(t, 512, info.Vocab)
			require.Equal(t, 10000.0, info.RopeTheta)
			require.Equal(t, 1e-5, info.NormEps)
			require.Equal(t, swarm.DTypeF32, info.DType)
			require.Equal(t, 1, info.BOS)
			require.Equal(t, 2, info.EOS)
			// s_m: per block 2 norms of 64 + wq 64x64 + wk, wv 32x64 + wo 64x64
			// + w1, w3 172x64 + w2 64x172, all float32.
			require.Equal(t, int64(4*(2*64+2*64*64+2*32*64+3*172*64)), info.BlockBytes)
			// 2 (K and V) * 4 KV heads * head size 8 * 4 bytes.
			require.Equal(t, int64(2*4*8*4), info.CacheBytesPerToken)
			require.Equal(t, 5*info.BlockBytes, l.engine.WeightBytes())
		})
	}
	// The two files differ only where the formats do.
	l := stories260K(t)
	require.Equal(t, 512, l["llama2c"].model.Info().MaxSeqLen)
	require.Equal(t, 2048, l["gguf"].model.Info().MaxSeqLen)
	require.True(t, l["llama2c"].model.Info().TiedEmbeddings)
	require.False(t, l["gguf"].model.Info().TiedEmbeddings, "the GGUF file stores output.weight explicitly")
}
