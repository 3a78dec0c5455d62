package llamabench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/llamabench"
)

func TestArgs(t *testing.T) {
	c := llamabench.Config{Model: "m.gguf", Threads: 2, PromptTokens: 127, GenTokens: 64}
	require.Equal(t, []string{"--model", "m.gguf", "--threads", "2", "--prompt-tokens", "127", "--gen-tokens", "64"}, c.Args())
	c.Sequences, c.SeqPromptTokens = []int{1, 4, 16}, 8
	require.Equal(t, []string{"--model", "m.gguf", "--threads", "2", "--prompt-tokens", "127", "--gen-tokens", "64",
		"--sequences", "1,4,16", "--seq-prompt-tokens", "8"}, c.Args())
}

// TestFindScriptErrors checks each missing piece is ErrUnavailable: no
// script above an empty directory, a script without node-llama-cpp beside
// it.
func TestFindScriptErrors(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: FindScript stops at that first")
	}
	_, err := llamabench.FindScript(t.TempDir(), "")
	require.ErrorIs(t, err, llamabench.ErrUnavailable)
	require.ErrorContains(t, err, llamabench.Script)

	dir := t.TempDir()
	script := filepath.Join(dir, "clients", "js", "llama_bench.mjs")
	require.NoError(t, os.MkdirAll(filepath.Dir(script), 0o755))
	require.NoError(t, os.WriteFile(script, nil, 0o644))
	_, err = llamabench.FindScript(filepath.Join(dir, "clients"), "")
	require.ErrorIs(t, err, llamabench.ErrUnavailable)
	require.ErrorContains(t, err, "node-llama-cpp is not installed")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "clients", "js", "node_modules", "node-llama-cpp"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clients", "js", "node_modules", "node-llama-cpp", "package.json"), []byte("{}"), 0o644))
	got, err := llamabench.FindScript(filepath.Join(dir, "clients"), "")
	require.NoError(t, err)
	require.Equal(t, script, got)
}
