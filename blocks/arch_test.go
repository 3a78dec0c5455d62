package blocks_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// TestCorruptArchFiles checks the errors of the architectures' own keys
// and tensors: each names the file and what is wrong.
func TestCorruptArchFiles(t *testing.T) {
	patch := func(t *testing.T, src, old, new string) string {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.Len(t, new, len(old))
		i := bytes.Index(data, []byte(old))
		require.Positive(t, i, old)
		copy(data[i:], new)
		p := filepath.Join(t.TempDir(), "m.gguf")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	editHF := func(t *testing.T, dir string, edit map[string]any) {
		p := filepath.Join(dir, "config.json")
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal(raw, &cfg))
		for k, v := range edit {
			cfg[k] = v
		}
		raw, err = json.Marshal(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, raw, 0o644))
	}
	qwen2 := synthFiles(t, archConfig(synth.ArchQwen2, swarm.DTypeF16))
	gemma3 := synthFiles(t, archConfig(synth.ArchGemma3, swarm.DTypeF16))
	t.Run("qwen2 gguf missing bias", func(t *testing.T) {
		p := patch(t, qwen2["gguf"], "blk.1.attn_k.bias", "blk.1.attn_k.bixs")
		openErr(t, p, p, "blk.1.attn_k.bias", "missing")
	})
	t.Run("gemma3 gguf missing sliding window", func(t *testing.T) {
		p := patch(t, gemma3["gguf"], "gemma3.attention.sliding_window", "gemma3.attention.sliding_windox")
		openErr(t, p, p, "gemma3.attention.sliding_window is missing")
	})
	t.Run("gemma3 gguf value length", func(t *testing.T) {
		data, err := os.ReadFile(gemma3["gguf"])
		require.NoError(t, err)
		key := []byte("gemma3.attention.value_length")
		i := bytes.Index(data, key) + len(key)
		require.Equal(t, uint32(4), binary.LittleEndian.Uint32(data[i:]), "a uint32 value follows")
		require.Equal(t, uint32(32), binary.LittleEndian.Uint32(data[i+4:]))
		binary.LittleEndian.PutUint32(data[i+4:], 16)
		p := filepath.Join(t.TempDir(), "m.gguf")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		openErr(t, p, p, "attention.value_length 16, want key_length 32")
	})
	for _, c := range []struct {
		name  string
		paths map[string]string
		edit  map[string]any
		want  string
	}{
		{"qwen2 sliding window", qwen2, map[string]any{"use_sliding_window": true}, "use_sliding_window = true is not supported"},
		{"gemma3 activation", gemma3, map[string]any{"hidden_activation": "relu"}, `hidden_activation "relu"`},
		{"gemma3 attention soft-cap", gemma3, map[string]any{"attn_logit_softcapping": 50.0}, "attn_logit_softcapping"},
		{"gemma3 no window", gemma3, map[string]any{"sliding_window": nil}, "sliding_window must be >= 1"},
		{"gemma3 irregular layer types", gemma3, map[string]any{"layer_types": []string{"full_attention", "sliding_attention", "full_attention"}},
			`layer_types[1] = "sliding_attention", want "full_attention"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hf")
			require.NoError(t, os.CopyFS(dir, os.DirFS(c.paths["hf"])))
			editHF(t, dir, c.edit)
			openErr(t, dir, "config.json", c.want)
		})
	}
}

// TestGemma3Multimodal reads a synthesized gemma3 model laid out as the
// multimodal Gemma 3 checkpoints are (model_type "gemma3", the text model's
// config under text_config, its tensors under a language_model prefix,
// older and newer transformers layouts) and requires the logits of the
// text-only directory.
func TestGemma3Multimodal(t *testing.T) {
	c := archConfig(synth.ArchGemma3, swarm.DTypeBF16)
	paths := synthFiles(t, c)
	want := logitsOf(t, load(t, paths["hf"]), testTokens)
	for _, prefix := range []string{"language_model.model.", "model.language_model."} {
		t.Run(prefix, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mm")
			require.NoError(t, os.CopyFS(dir, os.DirFS(paths["hf"])))
			raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
			require.NoError(t, err)
			var text map[string]any
			require.NoError(t, json.Unmarshal(raw, &text))
			outer := map[string]any{"model_type": "gemma3", "architectures": []string{"Gemma3ForConditionalGeneration"},
				"text_config": text, "vision_config": map[string]any{"model_type": "siglip_vision_model"}}
			raw, err = json.Marshal(outer)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644))

			st := filepath.Join(dir, "model.safetensors")
			data, err := os.ReadFile(st)
			require.NoError(t, err)
			n := binary.LittleEndian.Uint64(data)
			var hdr map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(data[8:8+n], &hdr))
			renamed := map[string]json.RawMessage{}
			for k, v := range hdr {
				if rest, ok := strings.CutPrefix(k, "model."); ok {
					k = prefix + rest
				}
				renamed[k] = v
			}
			h, err := json.Marshal(renamed)
			require.NoError(t, err)
			out := append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
			require.NoError(t, os.WriteFile(st, append(out, data[8+n:]...), 0o644))

			l := load(t, dir)
			require.Equal(t, "gemma3", l.model.Info().Arch)
			require.Equal(t, want, logitsOf(t, l, testTokens))
		})
	}
}

// TestMistralSlidingWindow sets Mistral 7B v0.1's kind of sliding_window
// (every block) in a synthesized mistral config.json: the logits of the
// first window positions stay those of the llama GGUF conversion (which
// has no window, as llama.cpp's converter writes Mistral), the later ones
// change.
func TestMistralSlidingWindow(t *testing.T) {
	paths := synthFiles(t, archConfig(synth.ArchMistral, swarm.DTypeF32))
	want := logitsOf(t, load(t, paths["gguf"]), testTokens)
	p := filepath.Join(paths["hf"], "config.json")
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	raw = bytes.Replace(raw, []byte(`"sliding_window": null`), []byte(`"sliding_window": 3`), 1)
	require.NoError(t, os.WriteFile(p, raw, 0o644))
	l := load(t, paths["hf"])
	info := l.model.Info()
	require.Equal(t, 3, info.SlidingWindow)
	require.Equal(t, 0, info.SlidingPattern, "every block slides")
	got := logitsOf(t, l, testTokens)
	for i := range testTokens {
		if i < 3 {
			require.Equal(t, want[i], got[i], "position %d", i)
		} else {
			require.NotEqual(t, want[i], got[i], "position %d", i)
		}
	}
}
