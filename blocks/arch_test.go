package blocks_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// archConfig is a small model of arch: 3 blocks (gemma3: local, global,
// local with a 4-token window, shorter than testTokens), grouped-query
// attention, and for qwen3 and gemma3 a head dim other than dim/heads.
func archConfig(arch string, dt swarm.DType) synth.Config {
	c := smallConfig(dt)
	c.Arch = arch
	c.Dim, c.FFN, c.Heads, c.KVHeads = 64, 96, 4, 2
	if arch == synth.ArchQwen3 || arch == synth.ArchGemma3 {
		c.HeadDim = 32 // q is [128, 64]
	}
	return c
}

// TestArchFormatsAgree writes each architecture as GGUF (the way
// llama.cpp's converter does: q/k permuted for llama and mistral only,
// Gemma norms stored as 1 + w) and as Hugging Face directories (one file
// and two shards) and requires the same ModelInfo shape and the same
// logits bit for bit from all three: both loaders must bring the weights
// to the same numbers in the same layout.
func TestArchFormatsAgree(t *testing.T) {
	for _, arch := range synth.Archs {
		for _, dt := range []swarm.DType{swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16} {
			t.Run(arch+"/"+dt.String(), func(t *testing.T) {
				c := archConfig(arch, dt)
				paths := synthFiles(t, c)
				hf := load(t, paths["hf"])
				want := logitsOf(t, hf, testTokens)
				wantInfo := c.Info()
				info := hf.model.Info()
				require.Equal(t, arch, info.Arch)
				require.Equal(t, wantInfo.HeadDim, info.HeadDim)
				require.Equal(t, wantInfo.SlidingWindow, info.SlidingWindow)
				require.Equal(t, wantInfo.SlidingPattern, info.SlidingPattern)
				require.Equal(t, wantInfo.RopeTheta, info.RopeTheta)
				require.Equal(t, wantInfo.TiedEmbeddings, info.TiedEmbeddings)
				for _, name := range []string{"hf-sharded", "gguf"} {
					l := load(t, paths[name])
					got := l.model.Info()
					wantArch := arch
					if name == "gguf" && arch == synth.ArchMistral {
						wantArch = "llama" // llama.cpp converts Mistral as "llama"
					}
					require.Equal(t, wantArch, got.Arch, name)
					got.Arch, got.Name, got.BlockBytes = info.Arch, info.Name, info.BlockBytes // norms: f32 in GGUF
					require.Equal(t, info, got, name)
					require.Equal(t, want, logitsOf(t, l, testTokens), name)
				}
			})
		}
	}
}

// TestArchQ8_0Loads loads the Q8_0 GGUF of every architecture and
// requires logits close to the f16 file's (Q8_0 rounds the weights more).
func TestArchQ8_0Loads(t *testing.T) {
	for _, arch := range synth.Archs {
		t.Run(arch, func(t *testing.T) {
			q8 := load(t, synthFiles(t, archConfig(arch, swarm.DTypeQ8_0))["gguf"])
			require.Equal(t, swarm.DTypeQ8_0, q8.model.Info().DType)
			f16 := load(t, synthFiles(t, archConfig(arch, swarm.DTypeF16))["gguf"])
			want := logitsOf(t, f16, testTokens)
			got := logitsOf(t, q8, testTokens)
			for i := range want {
				require.InDeltaSlice(t, want[i], got[i], 0.25, "position %d", i)
				require.NotEqual(t, want[i], got[i], "q8_0 rounds the weights")
			}
		})
	}
}

// TestGemma3SlidingWindow checks that gemma3's local blocks see only the
// last window positions: widening the window in config.json leaves the
// logits of positions inside the window unchanged and changes the later
// ones. Changing the local RoPE base changes every position but the
// first (position 0 is not rotated).
func TestGemma3SlidingWindow(t *testing.T) {
	c := archConfig(synth.ArchGemma3, swarm.DTypeF32)
	window := c.Info().SlidingWindow
	require.Less(t, window, len(testTokens))
	paths := synthFiles(t, c)
	want := logitsOf(t, load(t, paths["hf"]), testTokens)
	for _, e := range []struct {
		edit map[string]any
		same int // positions with unchanged logits
	}{
		{map[string]any{"sliding_window": 1000}, window},
		{map[string]any{"rope_local_base_freq": 500}, 1},
	} {
		edit := e.edit
		cfgPath := filepath.Join(paths["hf"], "config.json")
		raw, err := os.ReadFile(cfgPath)
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal(raw, &cfg))
		orig := bytes.Clone(raw)
		for k, v := range edit {
			cfg[k] = v
		}
		raw, err = json.Marshal(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfgPath, raw, 0o644))
		got := logitsOf(t, load(t, paths["hf"]), testTokens)
		for i := range e.same {
			require.Equal(t, want[i], got[i], "%v: position %d", edit, i)
		}
		for i := e.same; i < len(testTokens); i++ {
			require.NotEqual(t, want[i], got[i], "%v: position %d", edit, i)
		}
		require.NoError(t, os.WriteFile(cfgPath, orig, 0o644))
	}
}

// TestUnknownArchitecture requires a clear error naming the
// architecture and listing the supported ones, from both formats.
func TestUnknownArchitecture(t *testing.T) {
	paths := synthFiles(t, smallConfig(swarm.DTypeF32))
	cfgPath := filepath.Join(paths["hf"], "config.json")
	raw, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	raw = bytes.Replace(raw, []byte(`"model_type": "llama"`), []byte(`"model_type": "phi3"`), 1)
	require.NoError(t, os.WriteFile(cfgPath, raw, 0o644))
	_, err = blocks.Open(paths["hf"])
	require.ErrorIs(t, err, blocks.ErrFormat)
	require.ErrorContains(t, err, `model_type "phi3"`)
	require.ErrorContains(t, err, "supported: gemma3, llama, mistral, qwen2, qwen3")

	raw, err = os.ReadFile(paths["gguf"])
	require.NoError(t, err)
	i := bytes.Index(raw, []byte("general.architecture"))
	require.Positive(t, i)
	j := i + bytes.Index(raw[i:], []byte("llama"))
	copy(raw[j:], "phi_3")
	require.NoError(t, os.WriteFile(paths["gguf"], raw, 0o644))
	_, err = blocks.Open(paths["gguf"])
	require.ErrorIs(t, err, blocks.ErrFormat)
	require.ErrorContains(t, err, `general.architecture "phi_3" is not supported (supported: gemma3, llama, mistral, qwen2, qwen3)`)
}
