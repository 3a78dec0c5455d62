package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/fleet"
	"github.com/swarmllm/swarm/internal/testenv"
)

const clusteredFleet = "testdata/plan/clustered.json"

// Clustered scenario of paper 003 (Table 2; BLOOM-176B): values used to
// check the binary's output by hand, independently of placement/.
const (
	tauA100 = 0.0032197 // s per block per token
	rttFar  = 0.1       // s, across clusters (Table 2)
	rttNear = 0.005     // s, inside a cluster
)

// runSwarm runs the real binary and returns stdout, stderr and the exit
// status.
func runSwarm(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.SwarmBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

func planJSONOf(t *testing.T, args ...string) fleet.Summary {
	t.Helper()
	stdout, stderr, code := runSwarm(t, append([]string{"plan", "--json"}, args...)...)
	require.Zero(t, code, "stderr: %s", stderr)
	var pj fleet.Summary
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&pj), stdout)
	return pj
}

// TestPlanClusteredCGBP runs `swarm plan` on the paper's clustered fleet.
//
// The paper (Sec. 4.2.1, Remark) says CG-BP places 41 blocks on each A100
// and 3 on each MIG. With the fleet's numbers (M = 86.13e9 / 9.1e9 bytes,
// s_m = 1323397667, s_c = 8486912) and R = 89 (mean 80 + std 8.94 for
// 0.5 sessions/s and 160 s sessions) line 1 of Alg. 1 gives
// floor(86.13e9 / (s_m + 89 s_c)) = floor(41.43) = 41 per A100, as the
// paper says, but floor(9.1e9 / 2.0787e9) = floor(4.38) = 4 per MIG, not 3:
// a MIG gets 3 only when s_m + s_c R > 9.1e9 / 4, i.e. R >= 113, and then an
// A100 gets floor(86.13e9 / 2.2824e9) = 37. No R gives 41 and 3 together
// with these memories (it needs M_MIG < 4/41 * M_A100 = 8.40e9 bytes); see
// the closing report. The test asserts what the formulas give.
func TestPlanClusteredCGBP(t *testing.T) {
	pj := planJSONOf(t, "--config", clusteredFleet)
	require.True(t, pj.Feasible)
	require.Equal(t, 89, pj.TargetSessions)
	require.Len(t, pj.Servers, 9)
	for _, s := range pj.Servers {
		if strings.HasPrefix(s.Name, "a100") {
			require.Equal(t, 41, s.End-s.Start, s.Name)
		} else {
			require.Equal(t, 4, s.End-s.Start, s.Name)
		}
	}
	// Lemma 3.3: the two A100s (smallest t~) lie end to end, the second one
	// flush with the last block: a_2 = L - m_2 = 29.
	require.Equal(t, fleet.NamedSpan{Name: "a100-1", Start: 0, End: 41}, pj.Servers[0])
	require.Equal(t, fleet.NamedSpan{Name: "a100-2", Start: 29, End: 70}, pj.Servers[1])

	// (17): K = 2, t~ = tau + 0.1/41: 2 * 41 t~ - tau (82 - 70).
	require.NotNil(t, pj.UpperBound)
	require.InDelta(t, 2*(rttFar+41*tauA100)-12*tauA100, *pj.UpperBound, 1e-12)
	require.NotNil(t, pj.LowerBound)
	require.Less(t, *pj.LowerBound, *pj.UpperBound)
	// Exact single-session bound (m̄ = floor(86.13e9 / (s_m + s_c)) = 64 per
	// A100, min(6, 4) = 4 per MIG): c0 and c1 cross both A100s,
	// 2 rtt + 70 tau_A100; c2, near the MIGs, does better with 64 blocks on
	// an A100 and 6 on two MIGs: 0.1 + 64 tau_A100 + 2*0.005 + 6 tau_MIG.
	// R = 89 splits 30/30/29.
	const tauMIG = 0.0162488
	c2 := rttFar + 64*tauA100 + 2*rttNear + 6*tauMIG
	require.NotNil(t, pj.SessionBound)
	require.InDelta(t, (30*(2*rttFar+70*tauA100)+30*(2*rttNear+70*tauA100)+29*c2)/89, *pj.SessionBound, 1e-12)
	require.Greater(t, *pj.SessionBound, *pj.LowerBound)

	wantChain := []fleet.NamedSpan{{Name: "a100-1", Start: 0, End: 41}, {Name: "a100-2", Start: 41, End: 70}}
	for client, rtt := range map[string]float64{"c0": rttFar, "c1": rttNear, "c2": rttFar} {
		r, ok := pj.Routes[client]
		require.True(t, ok, client)
		require.Equal(t, wantChain, r.Chain, client)
		require.InDelta(t, 2*rtt+70*tauA100, r.PerToken, 1e-12, client) // eq. (4) over two hops
	}
}

// TestPlanClusteredPetals: PETALS' own rule, floor((M - 2 GiB) / (s_m +
// 2*14336*4096*2)), gives 53 blocks per A100 and 4 per MIG, the numbers
// the paper reports for PETALS (Sec. 4.2.1, Remark):
// (86.13e9 - 2147483648) / 1558278691 = 53.9; (9.1e9 - 2147483648) /
// 1558278691 = 4.46.
func TestPlanClusteredPetals(t *testing.T) {
	pj := planJSONOf(t, "--config", clusteredFleet, "--algorithm", "petals")
	require.True(t, pj.Feasible)
	for _, s := range pj.Servers {
		want := 4
		if strings.HasPrefix(s.Name, "a100") {
			want = 53
		}
		require.Equal(t, want, s.End-s.Start, s.Name)
	}
	// The second A100 takes the only window holding all 17 unserved blocks.
	require.Equal(t, fleet.NamedSpan{Name: "a100-2", Start: 17, End: 70}, pj.Servers[1])
}

// TestPlanScript runs testdata/plan/cli.txt: command lines of the real
// binary with their exact stdout/stderr and exit status (regenerate with
// -rewrite and review by hand).
func TestPlanScript(t *testing.T) {
	datadriven.RunTest(t, "testdata/plan/cli.txt", func(t *testing.T, d *datadriven.TestData) string {
		require.Equal(t, "swarm", d.Cmd, "the only command is `swarm` with the command line as input")
		stdout, stderr, code := runSwarm(t, strings.Fields(d.Input)...)
		var b strings.Builder
		b.WriteString(stdout)
		if stderr != "" {
			b.WriteString("stderr: " + stderr)
		}
		if code != 0 {
			b.WriteString("exit status " + strconv.Itoa(code) + "\n")
		}
		return b.String()
	})
}

// TestPlanHelpExplainsFlags: --help names every flag and the fleet schema.
func TestPlanHelpExplainsFlags(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"plan", "--help"})
	require.NoError(t, root.Execute())
	help := out.String()
	for _, want := range []string{
		"--config", "--algorithm", "--json", "--target-sessions", "--max-length", "--compare-random", "--seed",
		"cgbp", "petals", "optimal", "refined", "opt-order", "opt-number",
		`"model"`, `"blocks"`, `"block_bytes"`, `"cache_bytes_per_block"`, `"target_sessions"`,
		`"arrival_rate"`, `"session_time"`, `"clients"`, `"servers"`, `"memory_bytes"`, `"tau"`, `"rtt"`,
		`"max_blocks"`, `"petals"`, "0-based and half-open",
	} {
		require.Contains(t, help, want)
	}
}

// TestPlanBadFleet: a fleet file that breaks the schema gets an error
// naming the field and what is expected.
func TestPlanBadFleet(t *testing.T) {
	const good = `{"model": {"blocks": 4, "block_bytes": 100, "cache_bytes_per_block": 10},
 "target_sessions": 2, "clients": ["c0"],
 "servers": [{"name": "a", "memory_bytes": 1000, "tau": 0.01, "rtt": {"c0": 0.1}}]}`
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown field", `"tau": 0.01`, `"tua": 0.01`, `unknown field "tua"`},
		{"missing tau", `"tau": 0.01, `, ``, "servers[0] (a).tau is missing"},
		{"blocks", `"blocks": 4`, `"blocks": 0`, "model.blocks = 0"},
		{"fractional bytes", `"block_bytes": 100`, `"block_bytes": 100.5`, "model.block_bytes = 100.5 is not a whole number of bytes"},
		{"missing cache", `, "cache_bytes_per_block": 10`, ``, "model.cache_bytes_per_block is missing"},
		{"negative memory", `"memory_bytes": 1000`, `"memory_bytes": -1`, "servers[0] (a).memory_bytes = -1"},
		{"rtt missing client", `"rtt": {"c0": 0.1}`, `"rtt": {}`, `servers[0] (a).rtt has no entry for client "c0"`},
		{"rtt extra client", `"rtt": {"c0": 0.1}`, `"rtt": {"c0": 0.1, "c9": 1}`, `names client "c9", which is not in clients`},
		{"negative rtt", `"rtt": {"c0": 0.1}`, `"rtt": {"c0": -0.1}`, "servers[0] (a).rtt[0] = -0.1"},
		{"no clients", `"clients": ["c0"]`, `"clients": []`, "clients is empty"},
		{"duplicate server", `{"name": "a", "memory_bytes": 1000, "tau": 0.01, "rtt": {"c0": 0.1}}`,
			`{"name": "a", "memory_bytes": 1000, "tau": 0.01, "rtt": {"c0": 0.1}}, {"name": "a", "memory_bytes": 1000, "tau": 0.01, "rtt": {"c0": 0.1}}`,
			`servers[1].name = "a" appears twice`},
		{"both R sources", `"target_sessions": 2`, `"target_sessions": 2, "arrival_rate": 1, "session_time": 2`, "either target_sessions or arrival_rate"},
		{"half load", `"target_sessions": 2`, `"arrival_rate": 1`, "arrival_rate and session_time go together"},
		{"no R", `"target_sessions": 2,`, ``, "no target sessions"},
		{"not json", `{"model"`, `{model`, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(good, tt.old, tt.new, 1)
			require.NotEqual(t, good, text, "the replacement must change the fleet")
			path := filepath.Join(t.TempDir(), "fleet.json")
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			err := runPlan(&bytes.Buffer{}, planOptions{config: path, algorithm: "cgbp"})
			require.ErrorIs(t, err, fleet.ErrBadFleet)
			require.ErrorContains(t, err, tt.want)
		})
	}
	path := filepath.Join(t.TempDir(), "fleet.json")
	require.NoError(t, os.WriteFile(path, []byte(good), 0o644))
	var out bytes.Buffer
	require.NoError(t, runPlan(&out, planOptions{config: path, algorithm: "cgbp"}))
	require.Contains(t, out.String(), "feasible: yes")
	require.ErrorIs(t, runPlan(&out, planOptions{algorithm: "cgbp"}), errUsage)
	require.ErrorIs(t, runPlan(&out, planOptions{config: path, algorithm: "greedy"}), errUsage)
	require.ErrorIs(t, runPlan(&out, planOptions{config: path, algorithm: "cgbp", targetSet: true}), errUsage)
}
