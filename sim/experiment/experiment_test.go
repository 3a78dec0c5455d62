package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/sim"
	"github.com/swarmllm/swarm/sim/experiment"
)

// small is a quick clustered experiment: 2 runs of 10 sessions, proposed
// and petals.
func small() experiment.Options {
	o := experiment.DefaultOptions()
	o.Runs, o.Requests, o.Algorithms = 2, 10, []string{"proposed", "petals"}
	return o
}

func topology(t *testing.T, name string) string {
	return testenv.SharedFile(t, "topologies", "repetita", "2016TopologyZooUCL_unary", name)
}

func TestNewRejectsBadOptions(t *testing.T) {
	abvt := topology(t, "Abvt.graph")
	for _, tt := range []struct {
		name   string
		change func(*experiment.Options)
		want   string
	}{
		{"rate", func(o *experiment.Options) { o.Rate = 0 }, "sim: bad config: arrival rate 0 sessions/s"},
		{"output tokens", func(o *experiment.Options) { o.OutputTokens = 0 }, "0 output tokens, want >= 1"},
		{"runs", func(o *experiment.Options) { o.Runs = 0 }, "--runs 0, want >= 1"},
		{"parallel", func(o *experiment.Options) { o.Parallel = 0 }, "--parallel 0, want >= 1"},
		{"no algorithms", func(o *experiment.Options) { o.Algorithms = nil }, "--algorithms is empty (want some of proposed,petals,"},
		{"calibration", func(o *experiment.Options) { o.Calibration = "paper" }, `--calibration "paper", want none or matlab`},
		{"algorithm", func(o *experiment.Options) { o.Algorithms = []string{"proposed", "magic"} }, `--algorithms: sim: bad config: unknown algorithm "magic"`},
		{"client cluster", func(o *experiment.Options) { o.ClientCluster = 5 }, "--client-cluster: "},
		{"topology on clustered", func(o *experiment.Options) { o.Topology = abvt }, "--topology is for --scenario topology"},
		{"scenario", func(o *experiment.Options) { o.Scenario = "ring" }, `--scenario "ring", want clustered or topology`},
		{"no topology", func(o *experiment.Options) { o.Scenario = "topology" }, "--scenario topology needs --topology FILE"},
		{"file type", func(o *experiment.Options) { o.Scenario, o.Topology = "topology", "net.txt" }, "--topology net.txt: want a Repetita .graph"},
		{"delays", func(o *experiment.Options) { o.Scenario, o.Topology, o.GraphMLDelays = "topology", "x.graphml", "moon" }, `--graphml-delays "moon", want fibre or repetita`},
		{"servers", func(o *experiment.Options) { o.Scenario, o.Topology, o.Servers = "topology", abvt, 23 }, "--servers 23, want 1..22 for Abvt (23 nodes, one left for the client)"},
		{"eta", func(o *experiment.Options) { o.Scenario, o.Topology, o.Eta = "topology", abvt, 2 }, "--eta 2, want a fraction in [0, 1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := small()
			tt.change(&o)
			_, err := experiment.New(o)
			require.ErrorIs(t, err, experiment.ErrBadOptions)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "experiment: bad options", "the sentinel's text stays out of the message")
			var oe *experiment.OptionError
			require.ErrorAs(t, err, &oe)
		})
	}

	o := small()
	o.Scenario, o.Topology = "topology", filepath.Join(t.TempDir(), "missing.graph")
	_, err := experiment.New(o)
	require.Error(t, err)
	require.NotErrorIs(t, err, experiment.ErrBadOptions, "an unreadable file is not a bad option")
}

// TestNewTopologyDefaults: 40% of the nodes are servers by default.
func TestNewTopologyDefaults(t *testing.T) {
	o := small()
	o.Scenario, o.Topology = "topology", topology(t, "Abvt.graph")
	e, err := experiment.New(o)
	require.NoError(t, err)
	require.Equal(t, 9, e.Options().Servers, "round(0.4 * 23)")
	require.Equal(t, "topology Abvt (23 nodes, 62 directed links, link delay 0.100..13.800 ms), 9 servers, eta 0.20; "+
		"BLOOM-176B, lI = 20, l_max = 128, rate 0.1/s, 10 requests, 2 runs, seed 1, calibration none; "+
		"servers batched (+3% per extra session, assumed), link cost eq8, placement batch", e.Describe())
	require.Equal(t, []string{"proposed", "petals"}, names(e.Algorithms()))
}

// TestRunIsDeterministic: the runs are the same whatever runs at once, and
// tick is called once per run.
func TestRunIsDeterministic(t *testing.T) {
	var results [][]sim.Result
	for _, parallel := range []int{1, 3} {
		o := small()
		o.Runs, o.Rate, o.Seed, o.Parallel = 4, 0.5, 9, parallel
		e, err := experiment.New(o)
		require.NoError(t, err)
		ticks := 0
		res, err := e.Run(context.Background(), func() { ticks++ })
		require.NoError(t, err)
		require.Equal(t, 4, ticks)
		require.Len(t, res, 2)
		for i := range res {
			require.Equal(t, 4, res[i].Runs)
			require.Greater(t, res[i].Runtime, 0.0)
			res[i].Runtime = 0 // wall time differs from run to run
		}
		results = append(results, res)
	}
	require.Equal(t, results[0], results[1])
	require.NoError(t, experiment.Failed(results[0]))
}

func TestRunStopsWithTheContext(t *testing.T) {
	e, err := experiment.New(small())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Run(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
}

// TestCalibration picks the MATLAB script of each setting: the 26-server
// BellCanada deployment of Table 5 uses test_general_case_online_large.m
// (350 s for petals) outside sweeps only.
func TestCalibration(t *testing.T) {
	bell := topology(t, "Bellcanada.graph")
	for _, tt := range []struct {
		name    string
		change  func(*experiment.Options)
		initial float64
		petals  float64
	}{
		{"clustered", func(*experiment.Options) {}, 0.1, 250},
		{"topology", func(o *experiment.Options) { o.Scenario, o.Topology, o.Servers = "topology", bell, 25 }, 0.07, 250},
		{"table 5", func(o *experiment.Options) { o.Scenario, o.Topology, o.Servers = "topology", bell, 26 }, 0.07, 350},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := small()
			tt.change(&o)
			e, err := experiment.New(o)
			require.NoError(t, err)
			require.True(t, e.Calibration().IsNone())
			require.Nil(t, e.Report(nil).CalibrationConstants)
			o.Calibration = sim.CalibrationMATLAB
			e, err = experiment.New(o)
			require.NoError(t, err)
			c := e.Calibration()
			require.InDelta(t, tt.initial, c.InitialDelay, 1e-12)
			require.Equal(t, tt.petals, c.AllocationDelay["petals"])
			require.Equal(t, 60.0, c.AllocationDelay["proposed"])
			r := e.Report(nil)
			require.Equal(t, "matlab", r.Calibration)
			require.Equal(t, &c, r.CalibrationConstants)
		})
	}
	o := small()
	o.Scenario, o.Topology, o.Servers, o.Calibration = "topology", bell, 26, sim.CalibrationMATLAB
	s, err := experiment.NewSweep(o, "servers", []float64{26}, false)
	require.NoError(t, err)
	require.Equal(t, 250.0, s.Report(nil).CalibrationConstants.AllocationDelay["petals"], "the sweeps use 250 s (General_varying_*_online.m)")
}

// TestPaper: the paper reports only its 100-request settings; Table 4,
// Cluster0, 0.5 requests/s, l_max = 64 gives PETALS 6.28 s per token.
func TestPaper(t *testing.T) {
	o := small()
	o.Rate, o.OutputTokens = 0.5, 64
	e, err := experiment.New(o)
	require.NoError(t, err)
	_, ok := e.Paper()
	require.False(t, ok, "10 requests")
	require.Nil(t, e.Report(nil).Paper)

	o.Requests = 100
	e, err = experiment.New(o)
	require.NoError(t, err)
	p, ok := e.Paper()
	require.True(t, ok)
	require.Equal(t, "Tables 4, C.7, C.8", p.Source)
	require.Equal(t, 6.28, p.Petals.PerToken.Experiment)
	require.Equal(t, &p, e.Report(nil).Paper)
}

func TestWriteTextAndJSON(t *testing.T) {
	o := small()
	o.Runs = 1
	e, err := experiment.New(o)
	require.NoError(t, err)
	res, err := e.Run(context.Background(), nil)
	require.NoError(t, err)

	var text bytes.Buffer
	require.NoError(t, e.WriteText(&text, res))
	lines := strings.Split(text.String(), "\n")
	require.Equal(t, e.Describe(), lines[0])
	require.Equal(t, "calibration none (mechanism only)", lines[1])
	require.Contains(t, lines[2], "per-token (s)")
	require.Contains(t, text.String(), "proposed / petals: per-token")

	var js bytes.Buffer
	require.NoError(t, e.WriteJSON(&js, res))
	var got experiment.Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &got))
	require.Equal(t, e.Report(res), got)
	require.Equal(t, "none", got.Calibration)

	res[1].Runs, res[1].Errors = 0, []string{"no route", "no room"}
	require.EqualError(t, experiment.Failed(res), "sim: petals failed in every run: no route; no room")
}

func names(algs []sim.Algorithm) []string {
	var out []string
	for _, a := range algs {
		out = append(out, a.Name)
	}
	return out
}

// TestAddFlags: every option is a `swarm sim` flag whose default is the
// option's value.
func TestAddFlags(t *testing.T) {
	o := experiment.DefaultOptions()
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.Equal(t, "[proposed,petals,opt-order,opt-number,opt-rr]", fs.Lookup("algorithms").DefValue)
	require.Equal(t, "0.2", fs.Lookup("eta").DefValue)
	require.Contains(t, fs.Lookup("algorithms").Usage, "proposed (CG-BP placement + WS-RR routing")
	require.NoError(t, fs.Parse([]string{"--scenario", "topology", "--topology", "t.graph", "--graphml-delays", "repetita",
		"--servers", "7", "--eta", "0.5", "--client-cluster", "2", "--rate", "0.3", "--requests", "9", "--output-tokens", "16",
		"--input-tokens", "4", "--seed", "3", "--runs", "5", "--algorithms", "petals,opt-rr", "--calibration", "matlab", "--parallel", "2",
		"--preset", "table5-26", "--server-model", "serial", "--batch-growth", "0.1", "--link-cost", "eq4",
		"--petals-session-tokens", "512", "--placement", "live"}))
	require.Equal(t, experiment.Options{
		Scenario: "topology", Topology: "t.graph", GraphMLDelays: "repetita", Servers: 7, Eta: 0.5, ClientCluster: 2,
		Rate: 0.3, Requests: 9, OutputTokens: 16, InputTokens: 4, Seed: 3, Runs: 5,
		Algorithms: []string{"petals", "opt-rr"}, Calibration: "matlab", Parallel: 2,
		Preset: "table5-26", ServerModel: "serial", BatchGrowth: 0.1, LinkCost: "eq4", PetalsSessionTokens: 512, Placement: "live",
	}, o)
}
