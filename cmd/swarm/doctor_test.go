package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// doctorJSON is what `swarm doctor --json` prints, as far as the tests read.
type doctorJSON struct {
	Results []struct {
		Model       string  `json:"model"`
		Arch        string  `json:"arch"`
		DType       string  `json:"dtype"`
		MaxAbsErr   float64 `json:"max_abs_err"`
		MaxRelErr   float64 `json:"max_rel_err"`
		Bound       float64 `json:"bound"`
		ReplayExact bool    `json:"replay_exact"`
		BatchExact  *bool   `json:"batch_exact"`
		Pass        bool    `json:"pass"`
	} `json:"results"`
	Greedy struct {
		Skipped   string `json:"skipped"`
		Error     string `json:"error"`
		RefIDs    []int  `json:"reference_ids"`
		CandIDs   []int  `json:"candidate_ids"`
		FirstDiff int    `json:"first_diff"`
		Pass      bool   `json:"pass"`
	} `json:"greedy"`
	Pass bool `json:"pass"`
}

// TestDoctorCPU runs the real binary: the CPU against itself passes every
// row exactly, and the greedy check on stories260K (found through
// ../shared above the working directory, as testenv finds it) gives
// identical ids; without the shared directory it is skipped, saying why.
func TestDoctorCPU(t *testing.T) {
	stdout, stderr, code := runSwarmProcess(t, "doctor", "--device", "cpu", "--archs", "llama,qwen3", "--dtypes", "f32,q8_0", "--json")
	require.Zero(t, code, stderr)
	var res doctorJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.True(t, res.Pass, stdout)
	require.Len(t, res.Results, 4)
	var got []string
	for _, r := range res.Results {
		got = append(got, r.Arch+" "+r.DType)
		require.True(t, r.Pass, "%+v", r)
		require.Zero(t, r.MaxAbsErr)
		require.Equal(t, 1e-5, r.Bound)
		require.True(t, r.ReplayExact)
		require.NotNil(t, r.BatchExact)
		require.True(t, *r.BatchExact)
	}
	require.Equal(t, []string{"llama f32", "llama q8_0", "qwen3 f32", "qwen3 q8_0"}, got)
	require.Contains(t, stderr, "[4/4] qwen3 q8_0")
	require.True(t, res.Greedy.Pass, "%+v", res.Greedy)
	if !sharedPresent(t) {
		require.Contains(t, res.Greedy.Skipped, "stories260K not found")
		return
	}
	require.Empty(t, res.Greedy.Skipped)
	require.Equal(t, -1, res.Greedy.FirstDiff)
	require.Len(t, res.Greedy.RefIDs, 64)
	require.Equal(t, res.Greedy.RefIDs, res.Greedy.CandIDs)
}

// sharedPresent reports whether the shared data directory exists
// ($SWARM_SHARED, else ../shared beside the repository).
func sharedPresent(t *testing.T) bool {
	dir := os.Getenv("SWARM_SHARED")
	if dir == "" {
		dir = filepath.Join(testenv.RepoRoot(t), "..", "shared")
	}
	_, err := os.Stat(filepath.Join(dir, "models", "stories260K"))
	return err == nil
}

// TestDoctorTableAndFailures: the table output, a bound too small for f16
// caches failing rows with exit status 1, a missing --stories skipping
// nothing silently, and bad flags refused with status 2.
func TestDoctorTableAndFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{
			name:   "table",
			args:   []string{"--device", "cpu", "--cache-dtype", "f16", "--archs", "gemma3", "--dtypes", "f16", "--greedy-tokens", "0"},
			stdout: []string{"cpu (cache f16) against cpu (cache f32)", "ARCH", "gemma3", "0.02", "exact", "greedy: skipped: --greedy-tokens is 0", "PASS"},
			stderr: []string{"[1/1] gemma3 f16"},
		},
		{
			name:   "tiny bound fails",
			args:   []string{"--device", "cpu", "--cache-dtype", "f16", "--archs", "llama", "--dtypes", "f32", "--bound", "1e-12", "--greedy-tokens", "0"},
			code:   1,
			stdout: []string{"1e-12", "FAIL"},
			stderr: []string{"exceeds the bound", "doctor: cpu failed 1 of 2 checks"},
		},
		{
			name:   "unknown device",
			args:   []string{"--device", "nosuch"},
			code:   2,
			stderr: []string{`backend "nosuch" is not available (available: `, "cpu"},
		},
		{
			name:   "device required",
			args:   []string{"--archs", "llama"},
			code:   2,
			stderr: []string{"--device is required"},
		},
		{
			name:   "unknown dtype",
			args:   []string{"--device", "cpu", "--dtypes", "q9_9"},
			code:   2,
			stderr: []string{`unknown dtype "q9_9"`, "q4_k_m"},
		},
		{
			name:   "unknown arch",
			args:   []string{"--device", "cpu", "--archs", "gpt2"},
			code:   2,
			stderr: []string{`unknown architecture "gpt2"`},
		},
		{
			name:   "missing stories",
			args:   []string{"--device", "cpu", "--stories", "/nonexistent/stories260K"},
			code:   2,
			stderr: []string{"--stories: stories260K not found"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runSwarmProcess(t, append([]string{"doctor"}, tc.args...)...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, s := range tc.stdout {
				require.Contains(t, stdout, s)
			}
			for _, s := range tc.stderr {
				require.Contains(t, stderr, s)
			}
		})
	}
}

// TestDoctorHelp: every flag is documented.
func TestDoctorHelp(t *testing.T) {
	stdout, _, code := runSwarmProcess(t, "doctor", "--help")
	require.Zero(t, code)
	for _, flag := range []string{"--device", "--reference", "--archs", "--dtypes", "--stories", "--cache-dtype", "--json",
		"--bound", "--greedy-tokens", "--prompt", "--seed", "--prefill", "--decode", "--replay"} {
		require.Contains(t, stdout, flag)
	}
}
