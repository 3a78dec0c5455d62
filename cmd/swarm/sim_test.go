package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

type simOutput struct {
	Scenario             string `json:"scenario"`
	Calibration          string `json:"calibration"`
	CalibrationConstants *struct {
		Name            string             `json:"name"`
		InitialDelay    float64            `json:"initial_delay"`
		AllocationDelay map[string]float64 `json:"allocation_delay"`
		RoundWaits      bool               `json:"round_waits"`
	} `json:"calibration_constants"`
	Results []struct {
		Algorithm      string             `json:"algorithm"`
		PerToken       float64            `json:"per_token"`
		FirstToken     float64            `json:"first_token"`
		RemainingToken float64            `json:"remaining_token"`
		Waiting        float64            `json:"waiting"`
		Runtime        float64            `json:"runtime"`
		Runs           int                `json:"runs"`
		Blocks         map[string]float64 `json:"blocks_per_server"`
	} `json:"results"`
	Paper *struct {
		Source string `json:"source"`
	} `json:"paper"`
}

// TestSimJSONEndToEnd runs the real binary on small runs of both scenarios
// and checks the JSON contract of issue 6.
func TestSimJSONEndToEnd(t *testing.T) {
	bin := testenv.SwarmBinary(t)
	abvt := func(t *testing.T) string {
		return testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "Abvt.graph")
	}
	for _, tt := range []struct {
		name string
		args func(t *testing.T) []string
		l    float64
	}{
		{"clustered", func(*testing.T) []string {
			return []string{"--client-cluster", "1", "--rate", "0.5", "--output-tokens", "64"}
		}, 64},
		{"topology", func(t *testing.T) []string {
			return []string{"--scenario", "topology", "--topology", abvt(t), "--servers", "9"}
		}, 128},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"sim", "--json", "--runs", "2", "--requests", "12", "--algorithms", "proposed,petals"}, tt.args(t)...)
			cmd := exec.Command(bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			var got simOutput
			require.NoError(t, json.Unmarshal(out, &got), string(out))
			require.Len(t, got.Results, 2)
			require.Equal(t, "proposed", got.Results[0].Algorithm)
			require.Equal(t, "petals", got.Results[1].Algorithm)
			for _, r := range got.Results {
				require.Equal(t, 2, r.Runs)
				require.Greater(t, r.PerToken, 0.0)
				require.Greater(t, r.Runtime, 0.0, "placement + routing wall time is measured")
				require.GreaterOrEqual(t, r.FirstToken, r.Waiting)
				// every session: (wait + F + (l-1) D) / l, averaged
				require.InDelta(t, r.PerToken*tt.l, r.FirstToken+(tt.l-1)*r.RemainingToken, 1e-6)
			}
			require.Equal(t, 53.0, got.Results[1].Blocks["A100"], "PETALS puts 53 blocks on an A100 (paper 003 Sec. 4.2)")
			require.Nil(t, got.Paper, "the paper has no 12-request runs")
			require.Equal(t, "none", got.Calibration, "mechanism-only by default")
			require.Nil(t, got.CalibrationConstants)
		})
	}
}

func TestSimBadFlagsExitStatus2(t *testing.T) {
	bin := testenv.SwarmBinary(t)
	cmd := exec.Command(bin, "sim", "--scenario", "ring")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v: %s", err, out)
	require.Equal(t, 2, exit.ExitCode())
	require.Contains(t, string(out), `--scenario "ring", want clustered or topology`)
}

// runSim runs `swarm ARGS...` in-process and returns stdout and the error.
func runSim(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestSimRejectsBadFlags(t *testing.T) {
	abvt := testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "Abvt.graph")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"algorithm", []string{"--algorithms", "proposed,magic"}, `unknown algorithm "magic"`},
		{"client cluster", []string{"--client-cluster", "5"}, "client cluster 5"},
		{"runs", []string{"--runs", "0"}, "--runs 0"},
		{"rate", []string{"--rate", "-1"}, "arrival rate"},
		{"output tokens", []string{"--output-tokens", "0"}, "output tokens"},
		{"no topology", []string{"--scenario", "topology"}, "needs --topology"},
		{"topology on clustered", []string{"--topology", abvt}, "--topology is for --scenario topology"},
		{"too many servers", []string{"--scenario", "topology", "--topology", abvt, "--servers", "23"}, "want 1..22"},
		{"eta", []string{"--scenario", "topology", "--topology", abvt, "--eta", "2"}, "--eta 2"},
		{"file type", []string{"--scenario", "topology", "--topology", "net.txt"}, "want a Repetita .graph"},
		{"calibration", []string{"--calibration", "paper"}, `--calibration "paper", want none or matlab`},
		{"sweep calibration", []string{"sweep", "--vary", "rate", "--calibration", "MATLAB"}, `--calibration "MATLAB"`},
		{"sweep vary", []string{"sweep", "--vary", "weather"}, `--vary "weather"`},
		{"sweep servers clustered", []string{"sweep", "--vary", "servers"}, "needs --scenario topology"},
		{"sweep whole numbers", []string{"sweep", "--vary", "output-tokens", "--values", "64.5"}, "whole numbers"},
		{"preset", []string{"--preset", "table6"}, `--preset "table6", want one of table4-clustered`},
		{"preset needs topology", []string{"--preset", "table5-26"}, "--preset table5-26 needs --topology"},
		{"figure preset is a sweep", []string{"--preset", "fig7", "--topology", abvt}, "use swarm sim sweep --preset fig7"},
		{"server model", []string{"--server-model", "fifo"}, `server model "fifo"`},
		{"batch growth", []string{"--batch-growth", "-1"}, "--batch-growth -1"},
		{"link cost", []string{"--link-cost", "eq5"}, `link cost "eq5"`},
		{"petals session tokens", []string{"--petals-session-tokens", "-5"}, "--petals-session-tokens -5"},
		{"placement", []string{"--placement", "greedy"}, `placement process "greedy"`},
		{"move bandwidth", []string{"--move-bandwidth", "-1"}, "--move-bandwidth -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runSim(t, append([]string{"sim"}, tt.args...)...)
			require.ErrorIs(t, err, errUsage)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := runSim(t, "sim", "--scenario", "topology", "--topology", filepath.Join(t.TempDir(), "missing.graph"))
	require.Error(t, err)
}

// TestSimTableShowsPaperNumbers checks the table layout and that the
// paper's Table 4 / C.7 / C.8 numbers are printed for a matching setting.
func TestSimTableShowsPaperNumbers(t *testing.T) {
	out, err := runSim(t, "sim", "--runs", "1", "--rate", "0.5", "--output-tokens", "64", "--algorithms", "proposed,petals")
	require.NoError(t, err)
	for _, want := range []string{
		"clustered (Table 2), client in Cluster0",
		"per-token (s)", "first token (s)", "remaining (s)",
		"proposed / petals: per-token",
		"paper 003 Tables 4, C.7, C.8",
		// Table 4, Cluster0, 0.5 requests/s, l_max = 64: PETALS 6.28 (5.33)
		"per-token 6.28 (5.33)",
		// Table C.7, same cell: proposed first token 66.94 (73.51)
		"first token 66.94 (73.51)",
	} {
		require.Contains(t, out, want)
	}
}

func TestSimParallelRunsAreDeterministic(t *testing.T) {
	strip := func(s string) simOutput {
		var o simOutput
		require.NoError(t, json.Unmarshal([]byte(s), &o))
		for i := range o.Results {
			o.Results[i].Runtime = 0 // wall time differs from run to run
		}
		return o
	}
	args := []string{"sim", "--json", "--runs", "4", "--requests", "30", "--rate", "0.5", "--seed", "9"}
	one, err := runSim(t, append(args, "--parallel", "1")...)
	require.NoError(t, err)
	four, err := runSim(t, append(args, "--parallel", "4")...)
	require.NoError(t, err)
	require.Equal(t, strip(one), strip(four))
}

func TestSimSweepWritesPlot(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "rate.svg")
	out, err := runSim(t, "sim", "sweep", "--vary", "rate", "--values", "0.1,0.5", "--runs", "1", "--requests", "10",
		"--algorithms", "proposed,petals", "--plot", plot)
	require.NoError(t, err)
	require.Contains(t, out, "sweep of rate")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out) // header, column names, two values, plot path
	require.Contains(t, lines[1], "proposed (s/token)")
	require.True(t, strings.HasPrefix(strings.TrimSpace(lines[2]), "0.1"))
	require.True(t, strings.HasPrefix(strings.TrimSpace(lines[3]), "0.5"))
	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	require.Contains(t, string(svg), "<svg")
	require.Contains(t, string(svg), "proposed")
	require.Contains(t, string(svg), "petals")

	js, err := runSim(t, "sim", "sweep", "--vary", "output-tokens", "--values", "32,64", "--runs", "1", "--requests", "5",
		"--algorithms", "proposed", "--json")
	require.NoError(t, err)
	var sweep struct {
		Vary   string `json:"vary"`
		Points []struct {
			Value   float64 `json:"value"`
			Results []struct {
				Algorithm string  `json:"algorithm"`
				PerToken  float64 `json:"per_token"`
			} `json:"results"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &sweep))
	require.Equal(t, "output-tokens", sweep.Vary)
	require.Len(t, sweep.Points, 2)
	require.Equal(t, 64.0, sweep.Points[1].Value)
	require.Greater(t, sweep.Points[0].Results[0].PerToken, sweep.Points[1].Results[0].PerToken,
		"the first token is amortized over more tokens at l_max = 64")
}

// runSimJSON runs `swarm sim ARGS... --json` in-process and decodes it.
func runSimJSON(t *testing.T, args ...string) simOutput {
	t.Helper()
	out, err := runSim(t, append(append([]string{"sim"}, args...), "--json")...)
	require.NoError(t, err)
	var got simOutput
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	return got
}

// TestSimCalibrationMATLAB checks that --calibration matlab adds exactly
// the authors' constants: one session on an idle fleet never waits, so its
// first token grows by initial_delay + allocation_delay (60.1 s for
// proposed and 250.1 s for petals in the clustered scenario,
// test_general_case_online.m; 60.07 s and 350.07 s in the 26-server
// BellCanada deployment, test_general_case_online_large.m; 250.07 s for
// petals with 25 servers), and its remaining tokens do not change.
func TestSimCalibrationMATLAB(t *testing.T) {
	bell := testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "Bellcanada.graph")
	for _, tt := range []struct {
		name           string
		args           []string
		proposed, pets float64
	}{
		{"clustered", []string{"--client-cluster", "1"}, 60.1, 250.1},
		{"topology 26 servers", []string{"--scenario", "topology", "--topology", bell, "--servers", "26", "--eta", "0.2"}, 60.07, 350.07},
		{"topology 25 servers", []string{"--scenario", "topology", "--topology", bell, "--servers", "25", "--eta", "0.2"}, 60.07, 250.07},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--runs", "2", "--requests", "1", "--algorithms", "proposed,petals"}, tt.args...)
			none := runSimJSON(t, args...)
			matlab := runSimJSON(t, append(args, "--calibration", "matlab")...)
			require.Equal(t, "none", none.Calibration)
			require.Nil(t, none.CalibrationConstants)
			require.Equal(t, "matlab", matlab.Calibration)
			require.NotNil(t, matlab.CalibrationConstants)
			require.True(t, matlab.CalibrationConstants.RoundWaits)
			require.InDelta(t, tt.pets, matlab.CalibrationConstants.InitialDelay+matlab.CalibrationConstants.AllocationDelay["petals"], 1e-9)
			require.Contains(t, matlab.Scenario, "calibration matlab")
			for i, add := range []float64{tt.proposed, tt.pets} {
				n, m := none.Results[i], matlab.Results[i]
				require.Zero(t, n.Waiting, n.Algorithm)
				require.Zero(t, m.Waiting, m.Algorithm)
				require.InDelta(t, add, m.FirstToken-n.FirstToken, 1e-9, m.Algorithm)
				require.InDelta(t, n.RemainingToken, m.RemainingToken, 1e-12, m.Algorithm)
				require.InDelta(t, add/128, m.PerToken-n.PerToken, 1e-9, m.Algorithm)
			}
		})
	}
}

func TestSimCalibrationInTableAndSweep(t *testing.T) {
	out, err := runSim(t, "sim", "--runs", "1", "--requests", "5", "--algorithms", "proposed", "--calibration", "matlab")
	require.NoError(t, err)
	require.Contains(t, out, "seed 1, calibration matlab")
	require.Contains(t, out, "calibration matlab (initial delay 100 ms, allocation delay 60 s for proposed")
	require.Contains(t, out, "test_general_case_online.m (realnet = 0)")
	out, err = runSim(t, "sim", "--runs", "1", "--requests", "5", "--algorithms", "proposed")
	require.NoError(t, err)
	require.Contains(t, out, "calibration none (mechanism only)")

	// The sweeps of Figs. 6-9 use 250 s for the PETALS baselines whatever
	// the number of servers (General_varying_*_online.m).
	bell := testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "Bellcanada.graph")
	js, err := runSim(t, "sim", "sweep", "--scenario", "topology", "--topology", bell, "--vary", "servers", "--values", "26",
		"--runs", "1", "--requests", "2", "--algorithms", "petals", "--calibration", "matlab", "--json")
	require.NoError(t, err)
	var sweep simOutput
	require.NoError(t, json.Unmarshal([]byte(js), &sweep))
	require.Equal(t, "matlab", sweep.Calibration)
	require.Equal(t, 250.0, sweep.CalibrationConstants.AllocationDelay["petals"])
	require.InDelta(t, 0.07, sweep.CalibrationConstants.InitialDelay, 1e-15)
}

type simReportV2 struct {
	Schema string `json:"schema"`
	Config struct {
		Preset              string  `json:"preset"`
		Scenario            string  `json:"scenario"`
		TopologyName        string  `json:"topology_name"`
		Servers             int     `json:"servers"`
		Eta                 float64 `json:"eta"`
		Requests            int     `json:"requests"`
		InputTokens         int     `json:"input_tokens"`
		ServerModel         string  `json:"server_model"`
		LinkCost            string  `json:"link_cost"`
		PetalsSessionTokens int     `json:"petals_session_tokens"`
		Placement           string  `json:"placement"`
	} `json:"config"`
	Warnings      []string `json:"warnings"`
	Decomposition *struct {
		Gain           float64 `json:"gain"`
		FirstShare     float64 `json:"first_token_share"`
		RemainingShare float64 `json:"remaining_token_share"`
	} `json:"decomposition"`
	Results []struct {
		Algorithm      string  `json:"algorithm"`
		PerToken       float64 `json:"per_token"`
		PerTokenCI     float64 `json:"per_token_ci95"`
		FirstToken     float64 `json:"first_token"`
		RemainingToken float64 `json:"remaining_token"`
		MovedBytes     float64 `json:"moved_bytes"`
		MoveTime       float64 `json:"move_time"`
		Retries        float64 `json:"retries"`
		Runs           int     `json:"runs"`
	} `json:"results"`
	Paper *struct {
		Source string `json:"source"`
	} `json:"paper"`
	Comparisons []struct {
		Source     string  `json:"source"`
		Ratio      float64 `json:"ratio"`
		FirstShare float64 `json:"first_token_share"`
	} `json:"comparisons"`
}

func simJSON(t *testing.T, args ...string) simReportV2 {
	t.Helper()
	out, err := runSim(t, append([]string{"sim", "--json"}, args...)...)
	require.NoError(t, err)
	var got simReportV2
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, "swarm-sim/2", got.Schema)
	return got
}

// TestSimPreset: --preset table5-26 fills the paper's deployment (26
// servers, 5 A100s, lI 20, 100 requests) and shows the paper's numbers;
// an explicit --servers 60 keeps the preset's other values but warns and
// hides them (issue 16: a 60-server run is not Table 5).
func TestSimPreset(t *testing.T) {
	gts := testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "GtsCe.graph")
	base := []string{"--preset", "table5-26", "--topology", gts, "--runs", "2", "--algorithms", "proposed,petals"}
	got := simJSON(t, base...)
	require.Equal(t, "table5-26", got.Config.Preset)
	require.Equal(t, "topology", got.Config.Scenario)
	require.Equal(t, "GtsCe", got.Config.TopologyName)
	require.Equal(t, 26, got.Config.Servers)
	require.InDelta(t, 5.0/26, got.Config.Eta, 1e-12)
	require.Equal(t, [2]int{100, 20}, [2]int{got.Config.Requests, got.Config.InputTokens})
	require.Empty(t, got.Warnings)
	require.NotNil(t, got.Paper)
	require.Equal(t, "Tables 5, C.9, C.10", got.Paper.Source)
	require.NotNil(t, got.Decomposition)
	require.InDelta(t, 1, got.Decomposition.FirstShare+got.Decomposition.RemainingShare, 1e-9)
	// Both calibrations next to the paper's: Table 5 GTS-CE at 0.1
	// requests/s and l_max 128 is 0.95/4.69 (experiment), 0.91/3.47 (MATLAB).
	require.Len(t, got.Comparisons, 4)
	require.Equal(t, "ours, calibration none", got.Comparisons[0].Source)
	require.Equal(t, "ours, calibration matlab", got.Comparisons[1].Source)
	require.InDelta(t, 0.95/4.69, got.Comparisons[2].Ratio, 1e-12)
	require.InDelta(t, 0.91/3.47, got.Comparisons[3].Ratio, 1e-12)
	require.Less(t, got.Comparisons[1].Ratio, got.Comparisons[0].Ratio, "MATLAB's constants favour proposed")
	for _, r := range got.Results {
		require.Greater(t, r.PerTokenCI, 0.0, "two runs give a confidence interval")
	}

	got = simJSON(t, append(base, "--servers", "60")...)
	require.Equal(t, 60, got.Config.Servers)
	require.Nil(t, got.Paper)
	require.Empty(t, got.Comparisons)
	require.NotEmpty(t, got.Warnings)
	require.Contains(t, got.Warnings[0], "Table 5 ran GtsCe with 26 servers (5 A100s); this fleet has 60 servers")

	// Without a preset, a Table 5 topology with another fleet warns too.
	text, err := runSim(t, "sim", "--scenario", "topology", "--topology", gts, "--servers", "60", "--runs", "1", "--algorithms", "proposed")
	require.NoError(t, err)
	require.Contains(t, text, "WARNING: Table 5 ran GtsCe with 26 servers (5 A100s); this fleet has 60 servers (12 A100s): do not compare with Table 5")
}

// TestSimModelFlags: the new axes reach the simulation. Serial servers
// slow the remaining tokens of concurrent sessions (Sec. 2.2 assumes they
// do not); the live placement process moves weights and incremental does
// not; PETALS sessions reserving 4096 tokens retry more than 148-token ones.
func TestSimModelFlags(t *testing.T) {
	bell := testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "Bellcanada.graph")
	base := []string{"--preset", "table5-26", "--topology", bell, "--runs", "2", "--rate", "0.5", "--output-tokens", "64"}
	ind := simJSON(t, append(base, "--algorithms", "proposed", "--server-model", "independent")...)
	ser := simJSON(t, append(base, "--algorithms", "proposed", "--server-model", "serial")...)
	require.Equal(t, "serial", ser.Config.ServerModel)
	require.Greater(t, ser.Results[0].RemainingToken, ind.Results[0].RemainingToken)

	live := simJSON(t, append(base, "--algorithms", "proposed", "--placement", "live")...)
	require.Equal(t, "live", live.Config.Placement)
	require.Greater(t, live.Results[0].MovedBytes, 0.0)
	inc := simJSON(t, append(base, "--algorithms", "proposed", "--placement", "incremental")...)
	require.Zero(t, inc.Results[0].MovedBytes)
	slow := simJSON(t, append(base, "--algorithms", "proposed", "--placement", "live", "--move-bandwidth", "1")...)
	require.Greater(t, slow.Results[0].MoveTime, 1e9, "77 GB at 1 byte/s")
	require.InDelta(t, inc.Results[0].PerToken, slow.Results[0].PerToken, 1e-9, "never switched: the incremental placement")

	eq4 := simJSON(t, append(base, "--algorithms", "proposed", "--link-cost", "eq4")...)
	require.Equal(t, "eq4", eq4.Config.LinkCost)

	small := simJSON(t, append(base, "--algorithms", "petals")...)
	big := simJSON(t, append(base, "--algorithms", "petals", "--petals-session-tokens", "4096")...)
	require.Equal(t, 4096, big.Config.PetalsSessionTokens)
	require.Greater(t, big.Results[0].FirstToken, small.Results[0].FirstToken, "fewer PETALS sessions fit: more waiting")
}

// TestSimFleetAndModelFiles: --fleet takes a swarm plan fleet file and
// --model a ModelInfo JSON or a model file; the JSON echoes both, and no
// paper numbers are shown for them.
func TestSimFleetAndModelFiles(t *testing.T) {
	got := simJSON(t, "--fleet", filepath.Join("testdata", "plan", "clustered.json"), "--runs", "2", "--requests", "10", "--algorithms", "proposed,petals")
	require.Equal(t, "fleet", got.Config.Scenario)
	require.Len(t, got.Results, 2)
	for _, r := range got.Results {
		require.Greater(t, r.PerToken, 0.0)
	}
	require.Nil(t, got.Paper)

	info := filepath.Join(t.TempDir(), "model.json")
	require.NoError(t, os.WriteFile(info, []byte(`{"name": "tiny", "n_blocks": 6, "block_bytes": 1000000000, "cache_bytes_per_token": 100000}`), 0o644))
	got = simJSON(t, "--model", info, "--runs", "1", "--requests", "10", "--algorithms", "proposed")
	require.Equal(t, 1, got.Results[0].Runs)
	out, err := runSim(t, "sim", "--model", info, "--runs", "1", "--requests", "10", "--algorithms", "proposed")
	require.NoError(t, err)
	require.Contains(t, out, "; tiny, lI = 20")

	_, err = runSim(t, "sim", "--fleet", filepath.Join("testdata", "plan", "missing.json"))
	require.Error(t, err)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"n_blocks": 0}`), 0o644))
	_, err = runSim(t, "sim", "--model", bad)
	require.ErrorIs(t, err, errUsage)
	require.ErrorContains(t, err, "n_blocks 0")
}

// TestSimSweepPreset: --preset fig9 sweeps l_max with the paper's Fig. 9
// values (rate 0.5, 100 requests, C = 0.4 x 23 = 9 servers on AboveNet).
func TestSimSweepPreset(t *testing.T) {
	abvt := testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", "Abvt.graph")
	out, err := runSim(t, "sim", "sweep", "--preset", "fig9", "--topology", abvt, "--values", "32", "--runs", "1", "--algorithms", "proposed", "--json")
	require.NoError(t, err)
	var got struct {
		Schema string `json:"schema"`
		Vary   string `json:"vary"`
		Config struct {
			Rate     float64 `json:"rate"`
			Requests int     `json:"requests"`
			Servers  int     `json:"servers"`
			Preset   string  `json:"preset"`
		} `json:"config"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, "swarm-sim/2", got.Schema)
	require.Equal(t, "output-tokens", got.Vary)
	require.Equal(t, 0.5, got.Config.Rate)
	require.Equal(t, 100, got.Config.Requests)
	require.Equal(t, 9, got.Config.Servers)
	require.Equal(t, "fig9", got.Config.Preset)
	require.Empty(t, got.Warnings)
}

// TestSimSweepNoProgressOffTerminal: a sweep whose stderr is not a
// terminal writes no progress bar there.
func TestSimSweepNoProgressOffTerminal(t *testing.T) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"sim", "sweep", "--vary", "rate", "--values", "0.1", "--runs", "2", "--requests", "5", "--algorithms", "proposed"})
	require.NoError(t, root.ExecuteContext(context.Background()))
	require.Contains(t, out.String(), "sweep of rate")
	require.Empty(t, errOut.String())
}
