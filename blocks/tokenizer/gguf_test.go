package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// TestFromGGUFMatchesLlama2C checks SOURCE.md's claim that the GGUF's
// tokenizer equals tok512.bin (pieces with U+2581 for space, same scores).
func TestFromGGUFMatchesLlama2C(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	g, err := FromGGUF(filepath.Join(dir, "stories260K.gguf"))
	require.NoError(t, err)
	b, err := LoadLlama2C(filepath.Join(dir, "tok512.bin"))
	require.NoError(t, err)
	gp, gs, gt := g.Vocab()
	bp, bs, bt := b.Vocab()
	require.Equal(t, bp, gp)
	require.Equal(t, bs, gs)
	require.Equal(t, bt, gt, "types inferred for the .bin equal the GGUF's token_type")
	require.Equal(t, b.BOS(), g.BOS())
	require.Equal(t, b.EOS(), g.EOS())
	require.Equal(t, b.Unknown(), g.Unknown())
	require.True(t, g.DummyPrefix())
}

// TestFromGGUFTruncated cuts the GGUF inside its metadata (which ends before
// the tensor data at byte 14,176): every cut fails with ErrFormat.
func TestFromGGUFTruncated(t *testing.T) {
	data, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", "stories260K.gguf"))
	require.NoError(t, err)
	dir := t.TempDir()
	for _, n := range []int{0, 3, 4, 8, 16, 24, 100, 1000, 4000, 8000, 12000, 13500} {
		path := filepath.Join(dir, "cut.gguf")
		require.NoError(t, os.WriteFile(path, data[:n], 0o600))
		_, err := FromGGUF(path)
		require.ErrorIs(t, err, ErrFormat, "cut at %d", n)
		require.ErrorContains(t, err, path)
	}
}

func TestFromGGUFNotGGUF(t *testing.T) {
	path := testenv.SharedFile(t, "models", "stories260K", "tok512.bin")
	_, err := FromGGUF(path)
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, path)
}
