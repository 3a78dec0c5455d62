package cuda

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNcuKernelTimesScript runs scripts/ncu_kernel_times.py (the per-kernel
// step of scripts/gpu-check.sh) on testdata/ncu-h100.csv, a real
// `ncu --csv` capture of `swarm bench server --device cuda` on an H100
// (batch 1, 7B-shaped block), and checks its summary against values read
// off that file by hand: Wo's and W2's matvec_1 share a grid of 512 and
// are told apart by the bytes they read; rmsnorm of one row took 11,936 ns.
func TestNcuKernelTimesScript(t *testing.T) {
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "the script needs python3 (make test installs it)")
	out, err := exec.Command(python, filepath.Join("..", "..", "scripts", "ncu_kernel_times.py"), "--json",
		filepath.Join("testdata", "ncu-h100.csv")).Output()
	require.NoError(t, err)
	var rows []struct {
		Kernel   string   `json:"kernel"`
		Grid     int      `json:"grid"`
		MB       int      `json:"dram_read_mb"`
		Launches int      `json:"launches"`
		US       float64  `json:"median_us"`
		GBs      *float64 `json:"median_dram_read_gb_s"`
	}
	require.NoError(t, json.Unmarshal(out, &rows))
	find := func(kernel string, grid, mb int) (us, gbs float64, launches int) {
		t.Helper()
		for _, r := range rows {
			if r.Kernel == kernel && r.Grid == grid && r.MB == mb {
				require.NotNil(t, r.GBs, "%s: the capture has the DRAM metric", kernel)
				return r.US, *r.GBs, r.Launches
			}
		}
		t.Fatalf("no row for %s grid %d, %d MB in %s", kernel, grid, mb, out)
		return 0, 0, 0
	}
	us, gbs, n := find("matvec_1", 512, 34) // Wo: 33,587,456 bytes in 19,072 ns
	require.InDelta(t, 19.072, us, 1e-9)
	require.InDelta(t, 33587456.0/19072, gbs, 1e-9)
	require.Equal(t, 1, n)
	us, _, _ = find("matvec_1", 512, 90) // W2: 90,220,800 bytes in 41,536 ns
	require.InDelta(t, 41.536, us, 1e-9)
	us, _, _ = find("rmsnorm", 1, 0)
	require.InDelta(t, 11.936, us, 1e-9)
	_, _, n = find("attention", 32, 0) // launches 1, 16 and 18 of the capture
	require.Equal(t, 3, n)

	// A file without ncu's CSV header is refused with a message, not summarized.
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "ncu_kernel_times.py"), filepath.Join("testdata", "host_shim.h"))
	msg, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(msg), "no ncu CSV header")
}
