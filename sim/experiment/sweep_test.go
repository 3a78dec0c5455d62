package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/sim/experiment"
)

// TestDefaultValues: the values of Figs. 6-9; servers on Abvt's 23 nodes
// are round(f/10 * 23) for f = 1..9.
func TestDefaultValues(t *testing.T) {
	clustered, err := experiment.New(small())
	require.NoError(t, err)
	o := small()
	o.Scenario, o.Topology = "topology", topology(t, "Abvt.graph")
	abvt, err := experiment.New(o)
	require.NoError(t, err)

	for _, tt := range []struct {
		vary string
		e    *experiment.Experiment
		want []float64
	}{
		{"servers", abvt, []float64{2, 5, 7, 9, 12, 14, 16, 18, 21}},
		{"eta", abvt, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}},
		{"rate", clustered, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}},
		{"output-tokens", clustered, []float64{32, 64, 128, 256, 512}},
	} {
		got, err := tt.e.DefaultValues(tt.vary)
		require.NoError(t, err, tt.vary)
		require.Equal(t, tt.want, got, tt.vary)
	}
	for vary, want := range map[string]string{
		"servers": "--vary servers needs --scenario topology",
		"eta":     "--vary eta needs --scenario topology",
		"weather": `--vary "weather", want servers, eta, rate or output-tokens`,
	} {
		_, err := clustered.DefaultValues(vary)
		require.ErrorIs(t, err, experiment.ErrBadOptions)
		require.EqualError(t, err, want)
	}
}

func TestNewSweepRejectsBadValues(t *testing.T) {
	abvt := topology(t, "Abvt.graph")
	for _, tt := range []struct {
		name   string
		change func(*experiment.Options)
		vary   string
		values []float64
		want   string
	}{
		{"options", func(o *experiment.Options) { o.Runs = 0 }, "rate", nil, "--runs 0"},
		{"vary", func(*experiment.Options) {}, "weather", nil, `--vary "weather"`},
		{"vary with values", func(*experiment.Options) {}, "weather", []float64{1}, `--vary "weather"`},
		{"servers on clustered", func(*experiment.Options) {}, "servers", []float64{5}, "--vary servers needs --scenario topology"},
		{"whole numbers", func(*experiment.Options) {}, "output-tokens", []float64{64.5}, "--values 64.5: output-tokens must be whole numbers"},
		{"workload", func(*experiment.Options) {}, "rate", []float64{-1}, "--values -1: sim: bad config: arrival rate -1"},
		{"servers", func(o *experiment.Options) { o.Scenario, o.Topology = "topology", abvt }, "servers", []float64{23},
			"--values 23: want servers in 1..22 and eta in [0, 1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := small()
			tt.change(&o)
			_, err := experiment.NewSweep(o, tt.vary, tt.values, false)
			require.ErrorIs(t, err, experiment.ErrBadOptions)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestSweepRun sweeps the rate with N_R = 200 rate sessions per point
// unless the requests are kept, and writes the table, JSON and plot.
func TestSweepRun(t *testing.T) {
	o := small()
	o.Runs = 1
	s, err := experiment.NewSweep(o, "rate", []float64{0.01, 0.05}, false)
	require.NoError(t, err)
	require.Equal(t, 2, s.Runs())
	ticks := 0
	points, err := s.Run(context.Background(), func() { ticks++ })
	require.NoError(t, err)
	require.Equal(t, 2, ticks)
	require.Len(t, points, 2)
	require.Equal(t, 0.05, points[1].Value)
	require.Len(t, points[1].Results, 2)
	require.Equal(t, "proposed", points[1].Results[0].Algorithm)

	var text bytes.Buffer
	require.NoError(t, s.WriteText(&text, points))
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	require.Len(t, lines, 4, text.String()) // header, column names, two values
	require.Equal(t, "sweep of rate: clustered (Table 2), client in Cluster0; BLOOM-176B, lI = 20, l_max = 128, rate swept, "+
		"requests per point shown in the JSON, 1 runs, seed 1, calibration none; "+
		"servers batched (+3% per extra session, assumed), link cost eq8, placement batch", lines[0])
	require.Equal(t, "rate  proposed (s/token)  petals (s/token)  gain from first token", strings.TrimSpace(lines[1]))
	require.NotNil(t, points[0].Decomposition, "proposed and petals both ran")
	require.InDelta(t, 1, points[0].Decomposition.FirstShare+points[0].Decomposition.RemainingShare, 1e-9)
	require.True(t, strings.HasPrefix(strings.TrimSpace(lines[3]), "0.05"))

	var js bytes.Buffer
	require.NoError(t, s.WriteJSON(&js, points))
	var got experiment.SweepReport
	require.NoError(t, json.Unmarshal(js.Bytes(), &got))
	require.Equal(t, s.Report(points), got)
	require.Equal(t, "rate", got.Vary)

	plot := filepath.Join(t.TempDir(), "rate.svg")
	require.NoError(t, s.Plot(plot, points))
	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	require.Contains(t, string(svg), "<svg")
	require.Contains(t, string(svg), "petals")
	require.Error(t, s.Plot(plot, nil))
}

// TestSweepRequestsFollowTheRate: a rate sweep point of 0.01 sessions/s
// is the experiment of round(200 * 0.01) = 2 sessions, or of the given
// requests when they are kept.
func TestSweepRequestsFollowTheRate(t *testing.T) {
	o := small()
	o.Runs, o.Requests, o.Algorithms = 1, 7, []string{"proposed"}
	for keep, requests := range map[bool]int{false: 2, true: 7} {
		s, err := experiment.NewSweep(o, "rate", []float64{0.01}, keep)
		require.NoError(t, err)
		points, err := s.Run(context.Background(), nil)
		require.NoError(t, err)

		single := o
		single.Rate, single.Requests = 0.01, requests
		e, err := experiment.New(single)
		require.NoError(t, err)
		want, err := e.Run(context.Background(), nil)
		require.NoError(t, err)
		want[0].Runtime, points[0].Results[0].Runtime = 0, 0
		require.Equal(t, want, points[0].Results, "keep requests: %v", keep)
	}
}
