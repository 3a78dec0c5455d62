package synth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

func TestParseFormats(t *testing.T) {
	got, err := ParseFormats([]string{"hf", " GGUF", "llama2c "})
	require.NoError(t, err)
	require.Equal(t, []Format{FormatHF, FormatGGUF, FormatLlama2C}, got)
	got, err = ParseFormats(nil)
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = ParseFormats([]string{"hf", "onnx"})
	require.EqualError(t, err, `unknown format "onnx" (want hf, gguf or llama2c)`)
}

func TestWriteFormats(t *testing.T) {
	c := DefaultConfig()
	c.Name, c.Layers, c.Dim, c.FFN, c.Heads, c.KVHeads, c.Vocab, c.DType = "tiny", 1, 32, 64, 2, 1, 300, swarm.DTypeF32
	require.NoError(t, c.Validate())
	dir := filepath.Join(t.TempDir(), "new", "tiny")
	written, err := WriteFormats(dir, c, []Format{FormatGGUF, FormatHF, FormatLlama2C})
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "tiny.gguf"), dir, filepath.Join(dir, "tiny.bin")}, written)
	for _, f := range []string{"tiny.gguf", "config.json", "model.safetensors", "tiny.bin", "tokenizer.bin"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}

	_, err = WriteFormats(t.TempDir(), c, []Format{"onnx"})
	require.ErrorIs(t, err, ErrConfig)
	c.Layers = 0
	_, err = WriteFormats(t.TempDir(), c, []Format{FormatHF})
	require.ErrorIs(t, err, ErrConfig)
}
