package blocks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAsmGenerated runs each generator of blocks/asmgen in a scratch copy
// and requires the assembly it writes to equal the committed file byte
// for byte, so the kernels and their generators cannot drift apart.
func TestAsmGenerated(t *testing.T) {
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "the assembly generators need python3 (make test installs it)")
	for script, outs := range map[string][]string{
		"gemm512.py": {"gemm512_amd64.s"},
		"f16x8.py":   {"f16x8_amd64.s"},
		"q8gemm.py":  {"q8gemm_amd64.s"},
		"q8avx2.py":  {"q8avx2_amd64.s"},
		"kquant.py":  {"kquant_amd64.s", "kquant_amd64.go"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(dir, "asmgen"), 0o755))
		src, err := os.ReadFile(filepath.Join("asmgen", script))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "asmgen", script), src, 0o644))
		cmd := exec.Command(python, filepath.Join(dir, "asmgen", script))
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", script, b)
		for _, out := range outs {
			got, err := os.ReadFile(filepath.Join(dir, out))
			require.NoError(t, err)
			want, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "%s is not what asmgen/%s writes: run it and commit the result", out, script)
		}
	}
}
