package blocks_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// openErr opens path and requires an ErrFormat error mentioning every one
// of want, without a panic.
func openErr(t *testing.T, path string, want ...string) {
	t.Helper()
	var err error
	require.NotPanics(t, func() {
		var m *blocks.Model
		m, err = blocks.Open(path)
		if err == nil {
			m.Close()
		}
	})
	require.ErrorIs(t, err, blocks.ErrFormat)
	for _, w := range want {
		require.ErrorContains(t, err, w)
	}
}

// TestTruncatedFiles cuts each format's weight file short at several points:
// Open must fail with ErrFormat naming the file and, when the cut is in the
// tensor data, the tensor.
func TestTruncatedFiles(t *testing.T) {
	paths := synthFiles(t, smallConfig(swarm.DTypeF16))
	files := map[string]string{
		"gguf":       paths["gguf"],
		"llama2c-v0": paths["llama2c-v0"],
		"llama2c-v1": paths["llama2c-v1"],
		"hf":         filepath.Join(paths["hf"], "model.safetensors"),
	}
	for name, src := range files {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		for _, cut := range []struct {
			name   string
			size   int
			tensor bool // the cut is inside the tensor data
		}{
			{"empty", 0, false},
			{"12 bytes", 12, false},
			{"half", len(data) / 2, true},
			{"one byte short", len(data) - 1, true},
		} {
			t.Run(name+"/"+cut.name, func(t *testing.T) {
				dir := t.TempDir()
				dst := filepath.Join(dir, filepath.Base(src))
				if name == "hf" {
					copyFile(t, filepath.Join(paths["hf"], "config.json"), filepath.Join(dir, "config.json"))
				}
				require.NoError(t, os.WriteFile(dst, data[:cut.size], 0o644))
				open := dst
				if name == "hf" {
					open = dir
				}
				want := []string{dst}
				if cut.tensor {
					want = append(want, "tensor ", "truncated")
				}
				if name == "hf" && cut.size == 12 {
					want = []string{dst, "header length"}
				}
				openErr(t, open, want...)
			})
		}
	}
}

// TestCorruptFiles covers headers that lie: bad shapes and dtypes, missing
// tensors, impossible dims, unsupported tensor types.
func TestCorruptFiles(t *testing.T) {
	paths := synthFiles(t, smallConfig(swarm.DTypeF16))

	t.Run("llama2c zero heads", func(t *testing.T) {
		data, err := os.ReadFile(paths["llama2c-v0"])
		require.NoError(t, err)
		binary.LittleEndian.PutUint32(data[12:], 0)
		p := filepath.Join(t.TempDir(), "m.bin")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		openErr(t, p, p, "n_heads = 0")
	})
	t.Run("llama2c trailing bytes", func(t *testing.T) {
		data, err := os.ReadFile(paths["llama2c-v0"])
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), "m.bin")
		require.NoError(t, os.WriteFile(p, append(data, 1, 2, 3, 4), 0o644))
		openErr(t, p, p, "4 bytes after the last tensor")
	})
	t.Run("llama2c version 2", func(t *testing.T) {
		data, err := os.ReadFile(paths["llama2c-v1"])
		require.NoError(t, err)
		binary.LittleEndian.PutUint32(data[4:], 2)
		p := filepath.Join(t.TempDir(), "m.bin")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		openErr(t, p, "version 2")
	})
	t.Run("gguf unsupported tensor type", func(t *testing.T) {
		data, err := os.ReadFile(paths["gguf"])
		require.NoError(t, err)
		// Tensor info: name, n_dims 2, dims [64, 64], type. Make it IQ2_XXS (16).
		name := []byte("blk.1.attn_q.weight")
		i := bytes.Index(data, name)
		require.Positive(t, i)
		typeAt := i + len(name) + 4 + 16
		require.Equal(t, uint32(1), binary.LittleEndian.Uint32(data[typeAt:]), "F16 expected before the patch")
		binary.LittleEndian.PutUint32(data[typeAt:], 16)
		p := filepath.Join(t.TempDir(), "m.gguf")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		openErr(t, p, p, "blk.1.attn_q.weight", "IQ2_XXS", "want F32, F16, BF16, Q8_0, Q4_0")
	})
	t.Run("gguf partial quantized block", func(t *testing.T) {
		data, err := os.ReadFile(paths["gguf"])
		require.NoError(t, err)
		// Make blk.1.attn_q.weight [64, 64] Q4_K (12), whose blocks hold 256 values.
		name := []byte("blk.1.attn_q.weight")
		i := bytes.Index(data, name)
		require.Positive(t, i)
		binary.LittleEndian.PutUint32(data[i+len(name)+4+16:], 12)
		p := filepath.Join(t.TempDir(), "m.gguf")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		openErr(t, p, p, "blk.1.attn_q.weight", "q4_k row of 64 elements, want a multiple of its block size 256")
	})
	t.Run("gguf wrong shape", func(t *testing.T) {
		data, err := os.ReadFile(paths["gguf"])
		require.NoError(t, err)
		name := []byte("blk.2.ffn_down.weight")
		i := bytes.Index(data, name)
		require.Positive(t, i)
		dimAt := i + len(name) + 4
		require.Equal(t, uint64(128), binary.LittleEndian.Uint64(data[dimAt:]))
		binary.LittleEndian.PutUint64(data[dimAt:], 64) // [64, 64] instead of [128, 64]
		p := filepath.Join(t.TempDir(), "m.gguf")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		openErr(t, p, "blk.2.ffn_down.weight", "want [64 128]")
	})
	t.Run("not a model", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "m.txt")
		require.NoError(t, os.WriteFile(p, []byte("hello"), 0o644))
		openErr(t, p, "unknown model format")
	})

	hfCase := func(t *testing.T, edit func(cfg map[string]any, hdr map[string]any)) string {
		dir := t.TempDir()
		raw, err := os.ReadFile(filepath.Join(paths["hf"], "config.json"))
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal(raw, &cfg))
		st, err := os.ReadFile(filepath.Join(paths["hf"], "model.safetensors"))
		require.NoError(t, err)
		n := binary.LittleEndian.Uint64(st)
		var hdr map[string]any
		require.NoError(t, json.Unmarshal(st[8:8+n], &hdr))
		edit(cfg, hdr)
		raw, err = json.Marshal(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644))
		h, err := json.Marshal(hdr)
		require.NoError(t, err)
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		out = append(append(out, h...), st[8+n:]...)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), out, 0o644))
		return dir
	}
	t.Run("hf wrong model type", func(t *testing.T) {
		dir := hfCase(t, func(cfg, _ map[string]any) { cfg["model_type"] = "gpt2" })
		openErr(t, dir, "config.json", `model_type "gpt2"`)
	})
	t.Run("hf zero heads", func(t *testing.T) {
		dir := hfCase(t, func(cfg, _ map[string]any) { cfg["num_attention_heads"] = 0 })
		openErr(t, dir, "config.json", "n_heads = 0")
	})
	t.Run("hf missing tensor", func(t *testing.T) {
		dir := hfCase(t, func(_, hdr map[string]any) { delete(hdr, "model.layers.1.mlp.up_proj.weight") })
		openErr(t, dir, "model.layers.1.mlp.up_proj.weight", "missing")
	})
	t.Run("hf unsupported dtype", func(t *testing.T) {
		dir := hfCase(t, func(_, hdr map[string]any) {
			e := hdr["model.layers.0.self_attn.v_proj.weight"].(map[string]any)
			e["dtype"] = "I16"
		})
		openErr(t, dir, "model.layers.0.self_attn.v_proj.weight", "dtype I16")
	})
	t.Run("hf offsets past the data", func(t *testing.T) {
		dir := hfCase(t, func(_, hdr map[string]any) {
			e := hdr["model.norm.weight"].(map[string]any)
			e["data_offsets"] = []int64{1 << 40, 1<<40 + 128}
		})
		openErr(t, dir, "model.norm.weight", "data_offsets")
	})
	t.Run("hf shape does not match bytes", func(t *testing.T) {
		dir := hfCase(t, func(_, hdr map[string]any) {
			e := hdr["model.layers.2.self_attn.o_proj.weight"].(map[string]any)
			e["shape"] = []int{64, 65}
		})
		openErr(t, dir, "model.layers.2.self_attn.o_proj.weight", "needs")
	})
	t.Run("hf shape does not match config", func(t *testing.T) {
		dir := hfCase(t, func(cfg, _ map[string]any) { cfg["intermediate_size"] = 64 })
		openErr(t, dir, "model.layers.0.mlp.gate_proj.weight", "want [64 64]")
	})
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o644))
}
