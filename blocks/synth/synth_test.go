package synth

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	gguf "github.com/gpustack/gguf-parser-go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	require.NoError(t, ok.Validate())
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no layers", func(c *Config) { c.Layers = 0 }, "layers = 0"},
		{"odd head size", func(c *Config) { c.Dim, c.Heads = 60, 4 }, "heads = 4"},
		{"kv heads", func(c *Config) { c.KVHeads = 3 }, "kv-heads = 3"},
		{"vocab", func(c *Config) { c.Vocab = 258 }, "vocab = 258"},
		{"dtype", func(c *Config) { c.DType = swarm.DType(99) }, "dtype"},
		{"q8_0 dims", func(c *Config) { c.DType, c.FFN = swarm.DTypeQ8_0, 100 }, "multiples of 32"},
		{"arch", func(c *Config) { c.Arch = "phi3" }, `arch "phi3"`},
		{"head dim", func(c *Config) { c.HeadDim = 7 }, "head dim 7"},
		{"dim not split", func(c *Config) { c.Dim = 66 }, "divisor of dim = 66"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
	require.ErrorIs(t, WriteHF(t.TempDir(), Config{}), ErrConfig)
}

// TestVocab checks the vocabulary: the special and byte pieces in llama2.c's
// places, unique pieces, and every multi-character piece reachable as the
// merge of a shorter piece and one character.
func TestVocab(t *testing.T) {
	for _, n := range []int{259, 320, 1000, 32000} {
		pieces, scores, types, err := Vocab(n)
		require.NoError(t, err)
		require.Len(t, pieces, n)
		require.Len(t, scores, n)
		require.Len(t, types, n)
		require.Equal(t, []string{"<unk>", "<s>", "</s>", "<0x00>"}, pieces[:4])
		require.Equal(t, "<0xFF>", pieces[258])
		seen := map[string]bool{}
		for i, p := range pieces {
			require.False(t, seen[p], "duplicate piece %q", p)
			seen[p] = true
			if i < 259 || utf8.RuneCountInString(p) == 1 {
				continue
			}
			_, size := utf8.DecodeLastRuneInString(p)
			require.True(t, seen[p[:len(p)-size]], "piece %q has no prefix piece", p)
			require.Equal(t, typeNormal, types[i])
		}
	}
	_, _, _, err := Vocab(100)
	require.ErrorIs(t, err, ErrConfig)
}

// TestDeterministic writes the same config twice (same bytes) and with
// another seed (different bytes).
func TestDeterministic(t *testing.T) {
	c := DefaultConfig()
	c.Seed = 5
	dir := t.TempDir()
	write := func(name string, c Config) []byte {
		p := filepath.Join(dir, name)
		require.NoError(t, WriteGGUF(p, c))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return b
	}
	a, b := write("a.gguf", c), write("b.gguf", c)
	require.Equal(t, a, b)
	c.Seed = 6
	require.NotEqual(t, a, write("c.gguf", c))
}

// TestGGUFParses reads a written GGUF back with gguf-parser-go and checks
// the metadata and tensor infos against the spec's layout.
func TestGGUFParses(t *testing.T) {
	c := DefaultConfig()
	c.DType = swarm.DTypeQ8_0
	p := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, WriteGGUF(p, c))
	gf, err := gguf.ParseGGUFFile(p)
	require.NoError(t, err)
	require.Equal(t, gguf.GGUFVersionV3, gf.Header.Version)
	kv, ok := gf.Header.MetadataKV.Get("llama.block_count")
	require.True(t, ok)
	require.Equal(t, uint32(c.Layers), kv.ValueUint32())
	kv, ok = gf.Header.MetadataKV.Get("tokenizer.ggml.tokens")
	require.True(t, ok)
	require.Equal(t, uint64(c.Vocab), kv.ValueArray().Len)
	q, ok := gf.TensorInfos.Get("blk.1.attn_q.weight")
	require.True(t, ok)
	require.Equal(t, gguf.GGMLTypeQ8_0, q.Type)
	require.Equal(t, []uint64{64, 64}, q.Dimensions)
	n, ok := gf.TensorInfos.Get("blk.1.attn_norm.weight")
	require.True(t, ok)
	require.Equal(t, gguf.GGMLTypeF32, n.Type)
	st, err := os.Stat(p)
	require.NoError(t, err)
	var end uint64
	for _, ti := range gf.TensorInfos {
		require.Zero(t, ti.Offset%32, "%s is aligned", ti.Name)
		end = max(end, ti.Offset+ti.Bytes())
	}
	require.Equal(t, st.Size(), gf.TensorDataStartOffset+int64((end+31)/32*32), "the data ends at the last tensor, padded")
}

// TestGGUFArchKeys reads each architecture's GGUF back with gguf-parser-go
// and checks the names llama.cpp's loader looks up (llama-arch.cpp): the
// key prefix, gemma3's sliding-window keys, the extra block tensors and
// that 1-D tensors are F32.
func TestGGUFArchKeys(t *testing.T) {
	for _, c := range []struct {
		arch, prefix string
		keys         []string
		tensors      []string // in block 0, besides the Llama nine
	}{
		{ArchLlama, "llama", nil, nil},
		{ArchMistral, "llama", nil, nil},
		{ArchQwen2, "qwen2", nil, []string{"attn_q.bias", "attn_k.bias", "attn_v.bias"}},
		{ArchQwen3, "qwen3", []string{"attention.key_length"}, []string{"attn_q_norm.weight", "attn_k_norm.weight"}},
		{ArchGemma3, "gemma3", []string{"attention.sliding_window", "attention.sliding_window_pattern"},
			[]string{"attn_q_norm.weight", "attn_k_norm.weight", "post_attention_norm.weight", "post_ffw_norm.weight"}},
	} {
		t.Run(c.arch, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Arch = c.arch
			cfg.DType = swarm.DTypeQ8_0
			p := filepath.Join(t.TempDir(), "m.gguf")
			require.NoError(t, WriteGGUF(p, cfg))
			gf, err := gguf.ParseGGUFFile(p)
			require.NoError(t, err)
			kv, ok := gf.Header.MetadataKV.Get("general.architecture")
			require.True(t, ok)
			require.Equal(t, c.prefix, kv.ValueString())
			for _, k := range append([]string{"block_count", "embedding_length", "attention.head_count_kv", "rope.freq_base"}, c.keys...) {
				_, ok := gf.Header.MetadataKV.Get(c.prefix + "." + k)
				require.True(t, ok, "key %s.%s", c.prefix, k)
			}
			for _, n := range append([]string{"attn_norm.weight", "attn_q.weight", "ffn_down.weight"}, c.tensors...) {
				ti, ok := gf.TensorInfos.Get("blk.0." + n)
				require.True(t, ok, "tensor blk.0.%s", n)
				if len(ti.Dimensions) == 1 {
					require.Equal(t, gguf.GGMLTypeF32, ti.Type, n)
				} else {
					require.Equal(t, gguf.GGMLTypeQ8_0, ti.Type, n)
				}
			}
			_, tied := gf.TensorInfos.Get("output.weight")
			require.Equal(t, c.arch != ArchGemma3, tied, "gemma3 ties the LM head")
		})
	}
}

// TestQ8_0 checks the quantizer on a known block and its error bound.
func TestQ8_0(t *testing.T) {
	v := make([]float32, 64)
	for i := range v {
		v[i] = float32(i-32) / 8
	}
	q := quantizeQ8_0(v)
	require.Len(t, q, 2*34)
	require.Equal(t, byte(0x81), q[2], "-4 is -127 * d with d = 4/127") // int8(-127)
	back := make([]float32, 64)
	dequantizeQ8_0(q, back)
	for i := range v {
		require.InDelta(t, v[i], back[i], 4.0/127/2+1e-3)
	}
	require.True(t, bytes.Equal(q, quantizeQ8_0(back)), "requantizing is stable")
	require.False(t, math.IsNaN(float64(back[0])))
}
