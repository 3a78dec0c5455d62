package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/swarmllm/swarm/sim"
	"github.com/swarmllm/swarm/topologies"
)

// simOptions are the flags shared by `swarm sim` and `swarm sim sweep`.
type simOptions struct {
	scenario      string
	topology      string
	delays        string
	servers       int
	eta           float64
	clientCluster int
	rate          float64
	requests      int
	outputTokens  int
	inputTokens   int
	seed          uint64
	runs          int
	algorithms    []string
	calibration   string
	parallel      int
	json          bool
}

func addSimFlags(f *pflag.FlagSet, o *simOptions) {
	f.StringVar(&o.scenario, "scenario", "clustered", "clustered (paper 003 Table 2: 2 A100s, 7 MIGs, 3 clusters) or topology (servers scattered over --topology)")
	f.StringVar(&o.topology, "topology", "", "topology file for --scenario topology: a Repetita .graph file or a Topology Zoo .graphml file")
	f.StringVar(&o.delays, "graphml-delays", "fibre", "link delays of a .graphml file (it has none): fibre (great circle at 2/3 c) or repetita (Repetita's converter formula, the delays of paper 003 Table 3)")
	f.IntVar(&o.servers, "servers", 0, "number of servers C placed at random nodes (topology scenario; 0: 40% of the nodes, as in Figs. 7-9)")
	f.Float64Var(&o.eta, "eta", 0.2, "fraction of the servers that are A100s, the rest MIGs (topology scenario)")
	f.IntVar(&o.clientCluster, "client-cluster", 0, "cluster of the client (clustered scenario): 0 remote, 1 beside the A100s, 2 beside the MIGs")
	f.Float64Var(&o.rate, "rate", 0.1, "session arrival rate lambda, sessions per second (Poisson)")
	f.IntVar(&o.requests, "requests", 100, "number of sessions N_R per run")
	f.IntVar(&o.outputTokens, "output-tokens", 128, "tokens generated per session, l_max")
	f.IntVar(&o.inputTokens, "input-tokens", 20, "prompt tokens per session, lI")
	f.Uint64Var(&o.seed, "seed", 1, "random seed; run k uses the PCG stream (seed, k)")
	f.IntVar(&o.runs, "runs", 20, "Monte Carlo runs averaged (each draws arrivals, PETALS join order and, for topologies, server and client nodes)")
	f.StringSliceVar(&o.algorithms, "algorithms", sim.AlgorithmNames(), "comma-separated algorithms: "+algorithmHelp())
	f.StringVar(&o.calibration, "calibration", sim.CalibrationNone, "none: the mechanism-only model (default); "+
		"matlab: also add the unexplained per-session constants of the authors' MATLAB simulator to every first token "+
		"(allocation delay 60 s for proposed, 250 s for petals and the ablations, 350 s for them in the 26-server deployment of Table 5; "+
		"initial delay 100 ms clustered, 70 ms topology) and round proposed/opt-rr waits up to PETALS back-off steps")
	f.IntVar(&o.parallel, "parallel", runtime.GOMAXPROCS(0), "runs simulated at once (goroutines); use 1 for undisturbed runtime measurements")
	f.BoolVar(&o.json, "json", false, "print machine-readable JSON instead of a table")
}

func algorithmHelp() string {
	var parts []string
	for _, a := range sim.Algorithms() {
		parts = append(parts, fmt.Sprintf("%s (%s)", a.Name, a.Doc))
	}
	return strings.Join(parts, "; ")
}

func newSimCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim --scenario clustered|topology [--topology FILE] [flags]",
		Short: "Simulate a swarm serving sessions and compare placement/routing algorithms",
		Long: `sim runs the discrete-event simulator of paper 003's evaluation (Sec. 4,
App. C) with the same placement and routing code as the live swarm, and
prints a table like the paper's Table 4 (time per token over all tokens) with
the breakdown of Tables C.7/C.8 (first token, remaining tokens), averaged over
--runs Monte Carlo runs.

Model and hardware are the paper's: BLOOM-176B in 4 bits (70 blocks), A100
servers (tau 3.2197 ms, 86.13 GB) and MIG 1g.10gb slices (tau 16.2488 ms,
9.1 GB, at most 4 blocks), 100 ms per-token and 0.7049 lI + 67 ms per-input
overhead on top of the network RTT. Times are seconds; "runtime" is the wall
time of the placement and routing calls per run.

By default the model is mechanism-only. --calibration matlab adds the
constants the authors' MATLAB simulator (commit 3f78053) puts on every
session's first token and the paper never explains: allocation_delay_prop
(60 s, proposed), allocation_delay_petals (250 s for petals, opt-order,
opt-number and opt-rr; 350 s in test_general_case_online_large.m, used here
for the 26-server topology runs of Table 5 but not in sweeps) and
initial_delay (100 ms clustered, 70 ms topology), and rounds the waits of
proposed and opt-rr up to PETALS back-off steps (1, 3, 7, ... s). They add
to the first token and the total, not to the remaining tokens. The table
header and the JSON ("calibration") say which calibration was used.

Examples:
  swarm sim --scenario clustered --client-cluster 1 --rate 0.5 --output-tokens 64
  swarm sim --scenario clustered --client-cluster 1 --calibration matlab
  swarm sim --scenario topology --topology ../shared/topologies/repetita/2016TopologyZooUCL_unary/GtsCe.graph --servers 60 --runs 1
  swarm sim sweep --scenario topology --topology Abvt.graph --vary rate --plot rate.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setup, err := newSimSetup(o)
			if err != nil {
				return err
			}
			res, err := setup.runMany(cmd.Context(), nil)
			if err != nil {
				return err
			}
			return setup.print(cmd.OutOrStdout(), res)
		},
	}
	addSimFlags(cmd.Flags(), &o)
	cmd.AddCommand(newSimSweepCmd())
	return cmd
}

// simSetup is a validated scenario: the workload, the algorithms and, for
// the topology scenario, the loaded topology and its RTT matrix.
type simSetup struct {
	o     simOptions
	algs  []sim.Algorithm
	work  sim.Workload
	top   *topologies.Topology
	rtt   *topologies.RTTMatrix
	sweep bool // part of `swarm sim sweep` (the MATLAB sweeps' constants)
}

func newSimSetup(o simOptions) (*simSetup, error) {
	s := &simSetup{o: o, work: sim.Workload{Rate: o.rate, Requests: o.requests, InputTokens: o.inputTokens, OutputTokens: o.outputTokens}}
	if err := s.work.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case o.runs < 1:
		return nil, fmt.Errorf("%w: --runs %d, want >= 1", errUsage, o.runs)
	case o.parallel < 1:
		return nil, fmt.Errorf("%w: --parallel %d, want >= 1", errUsage, o.parallel)
	case len(o.algorithms) == 0:
		return nil, fmt.Errorf("%w: --algorithms is empty (want some of %s)", errUsage, strings.Join(sim.AlgorithmNames(), ","))
	}
	switch o.calibration {
	case sim.CalibrationNone, sim.CalibrationMATLAB:
	default:
		return nil, fmt.Errorf("%w: --calibration %q, want %s or %s", errUsage, o.calibration, sim.CalibrationNone, sim.CalibrationMATLAB)
	}
	for _, name := range o.algorithms {
		a, err := sim.LookupAlgorithm(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("%w: --algorithms: %w", errUsage, err)
		}
		s.algs = append(s.algs, a)
	}
	switch o.scenario {
	case "clustered":
		if o.topology != "" {
			return nil, fmt.Errorf("%w: --topology is for --scenario topology", errUsage)
		}
		if _, err := sim.Clustered(o.clientCluster); err != nil {
			return nil, fmt.Errorf("%w: --client-cluster: %w", errUsage, err)
		}
	case "topology":
		if o.topology == "" {
			return nil, fmt.Errorf("%w: --scenario topology needs --topology FILE (.graph or .graphml)", errUsage)
		}
		top, err := loadTopology(o.topology, o.delays)
		if err != nil {
			return nil, err
		}
		s.top = top
		if s.rtt, err = top.RTT(); err != nil {
			return nil, err
		}
		if o.servers == 0 {
			s.o.servers = max(1, int(math.Round(0.4*float64(len(top.Nodes)))))
		}
		if s.o.servers < 1 || s.o.servers > len(top.Nodes)-1 {
			return nil, fmt.Errorf("%w: --servers %d, want 1..%d for %s (%d nodes, one left for the client)",
				errUsage, s.o.servers, len(top.Nodes)-1, top.Name, len(top.Nodes))
		}
		if math.IsNaN(o.eta) || o.eta < 0 || o.eta > 1 {
			return nil, fmt.Errorf("%w: --eta %g, want a fraction in [0, 1]", errUsage, o.eta)
		}
	default:
		return nil, fmt.Errorf("%w: --scenario %q, want clustered or topology", errUsage, o.scenario)
	}
	return s, nil
}

// loadTopology reads a Repetita .graph or Topology Zoo .graphml file.
func loadTopology(path, delays string) (*topologies.Topology, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".graph":
		return topologies.LoadRepetita(path)
	case ".graphml", ".xml":
		var opts []topologies.GraphMLOption
		switch delays {
		case "fibre", "fiber":
		case "repetita":
			opts = append(opts, topologies.WithRepetitaDelays())
		default:
			return nil, fmt.Errorf("%w: --graphml-delays %q, want fibre or repetita", errUsage, delays)
		}
		return topologies.LoadGraphML(path, opts...)
	}
	return nil, fmt.Errorf("%w: --topology %s: want a Repetita .graph or a Topology Zoo .graphml file", errUsage, path)
}

// fleet draws run k's fleet: fixed for the clustered scenario, random
// server and client nodes for the topology scenario.
func (s *simSetup) fleet(rng *rand.Rand) (*sim.Fleet, error) {
	var f *sim.Fleet
	var err error
	if s.top == nil {
		f, err = sim.Clustered(s.o.clientCluster)
	} else {
		f, err = sim.OnTopology(s.top, s.rtt, s.o.servers, s.o.eta, rng)
	}
	if err != nil {
		return nil, err
	}
	f.Calibration = s.calibration()
	return f, nil
}

// calibration returns the --calibration constants for this scenario: the
// clustered branch of test_general_case_online.m, its realnet branch (and
// the General_varying_*_online.m sweeps) for topologies, or
// test_general_case_online_large.m for the 26-server deployment of Table 5
// outside sweeps.
func (s *simSetup) calibration() sim.Calibration {
	if s.o.calibration != sim.CalibrationMATLAB {
		return sim.NoCalibration()
	}
	setup := sim.MATLABClustered
	if s.top != nil {
		setup = sim.MATLABTopology
		if _, a100, ok := sim.PaperDeployment("bellcanada"); ok && !s.sweep && s.o.servers == 26 &&
			int(math.Round(s.o.eta*26)) == a100 {
			setup = sim.MATLABLargeTopology
		}
	}
	c, _ := sim.MATLABCalibration(setup)
	return c
}

// runOne simulates run k with its own PCG stream (seed, k).
func (s *simSetup) runOne(k int) ([]sim.Result, error) {
	rng := rand.New(rand.NewPCG(s.o.seed, uint64(k)))
	f, err := s.fleet(rng)
	if err != nil {
		return nil, err
	}
	return sim.Run(f, s.work, s.algs, rng, time.Now)
}

// runMany simulates --runs runs on --parallel goroutines and averages them.
// The simulator is deterministic per run, so the result does not depend
// on the scheduling. tick, if not nil, is called after each run.
func (s *simSetup) runMany(ctx context.Context, tick func()) ([]sim.Result, error) {
	runs := make([][]sim.Result, s.o.runs)
	errs := make([]error, s.o.runs)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(s.o.parallel, s.o.runs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				runs[k], errs[k] = s.runOne(k)
				if tick != nil {
					tick()
				}
			}
		}()
	}
feed:
	for k := range s.o.runs {
		select {
		case jobs <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return sim.Summarize(runs), nil
}

// describe is the one-line scenario header of tables; the parameter named
// swept (a --vary value, or "") is shown as swept instead of its value.
func (s *simSetup) describe(swept string) string {
	o := s.o
	val := func(name, text string) string {
		if name == swept {
			return name + " swept"
		}
		return text
	}
	var where string
	if s.top == nil {
		c := topologies.PaperClusters()
		where = fmt.Sprintf("clustered (Table 2), client in %s", c.Names[o.clientCluster])
	} else {
		lo, hi := s.top.DelayRange()
		where = fmt.Sprintf("topology %s (%d nodes, %d directed links, link delay %.3f..%.3f ms), %s, %s",
			s.top.Name, len(s.top.Nodes), len(s.top.Edges), lo*1e3, hi*1e3,
			val("servers", fmt.Sprintf("%d servers", o.servers)), val("eta", fmt.Sprintf("eta %.2f", o.eta)))
	}
	requests := fmt.Sprintf("%d requests", o.requests)
	if swept == "rate" {
		requests = "requests per point shown in the JSON"
	}
	return fmt.Sprintf("%s; BLOOM-176B, lI = %d, %s, %s, %s, %d runs, seed %d, calibration %s",
		where, o.inputTokens, val("output-tokens", fmt.Sprintf("l_max = %d", o.outputTokens)),
		val("rate", fmt.Sprintf("rate %g/s", o.rate)), requests, o.runs, o.seed, o.calibration)
}

// title is a short scenario name for plots.
func (s *simSetup) title() string {
	if s.top == nil {
		return fmt.Sprintf("clustered, client in Cluster%d", s.o.clientCluster)
	}
	return "topology " + s.top.Name
}

// paper returns the paper's numbers for this setting, if it reports any.
func (s *simSetup) paper() (source string, petals, proposed sim.PaperCell, ok bool) {
	o := s.o
	if o.inputTokens != 20 || o.requests != 100 {
		return "", sim.PaperCell{}, sim.PaperCell{}, false
	}
	if s.top == nil {
		petals, proposed, ok = sim.PaperClustered(o.clientCluster, o.rate, o.outputTokens)
		return "Tables 4, C.7, C.8", petals, proposed, ok
	}
	n, a100, dep := sim.PaperDeployment(s.top.Name)
	if !dep || n != o.servers || int(math.Round(o.eta*float64(n))) != a100 {
		return "", sim.PaperCell{}, sim.PaperCell{}, false
	}
	petals, proposed, ok = sim.PaperTopology(s.top.Name, o.rate, o.outputTokens)
	return "Tables 5, C.9, C.10", petals, proposed, ok
}

type simJSON struct {
	Scenario string `json:"scenario"`
	// Calibration is "none" or "matlab" (--calibration); the constants
	// themselves are in CalibrationConstants when not none.
	Calibration          string           `json:"calibration"`
	CalibrationConstants *sim.Calibration `json:"calibration_constants,omitempty"`
	Results              []sim.Result     `json:"results"`
	Paper                *paperJSON       `json:"paper,omitempty"`
}

// calibrationJSON returns the "calibration" and "calibration_constants"
// fields of the JSON outputs.
func (s *simSetup) calibrationJSON() (string, *sim.Calibration) {
	c := s.calibration()
	if c.IsNone() {
		return sim.CalibrationNone, nil
	}
	return c.Name, &c
}

type paperJSON struct {
	Source   string        `json:"source"`
	Petals   sim.PaperCell `json:"petals"`
	Proposed sim.PaperCell `json:"proposed"`
}

// print writes the table (or JSON) and fails when an algorithm failed in
// every run.
func (s *simSetup) print(w io.Writer, res []sim.Result) error {
	source, petals, proposed, ok := s.paper()
	if s.o.json {
		out := simJSON{Scenario: s.describe(""), Results: res}
		out.Calibration, out.CalibrationConstants = s.calibrationJSON()
		if ok {
			out.Paper = &paperJSON{Source: source, Petals: petals, Proposed: proposed}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, s.describe(""))
		fmt.Fprintln(w, s.calibration())
		if err := sim.WriteTable(w, res); err != nil {
			return err
		}
		if ok {
			sim.WritePaper(w, source, petals, proposed)
		}
	}
	for _, r := range res {
		if r.Runs == 0 {
			return fmt.Errorf("sim: %s failed in every run: %s", r.Algorithm, strings.Join(r.Errors, "; "))
		}
	}
	return nil
}

// sweepOptions are the flags of `swarm sim sweep`.
type sweepOptions struct {
	simOptions
	vary   string
	values []float64
	plot   string
}

func newSimSweepCmd() *cobra.Command {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep --vary servers|eta|rate|output-tokens [--values V,...] [--plot OUT.svg] [sim flags]",
		Short: "Vary one parameter and plot the time per token of each algorithm (paper 003 Figs. 6-9)",
		Long: `sweep runs 'swarm sim' for each value of one parameter and prints the average
time per token (over all tokens) of each algorithm; with --plot it draws the
curves of paper 003 Figs. 6-9 (gonum/plot; the format follows the file
extension: .svg, .png, .pdf, .eps).

Default values: servers 10%..90% of the nodes (Fig. 6), eta 0.1..1 (Fig. 7),
rate 0.1..1 per second with N_R = 200 * rate unless --requests is given
(Fig. 8), output-tokens 32..512 (Fig. 9). servers and eta need
--scenario topology. Progress goes to stderr.

Example:
  swarm sim sweep --scenario topology --topology Bellcanada.graph --vary eta --runs 5 --plot eta.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSweep(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, cmd.Flags().Changed("requests"))
		},
	}
	addSimFlags(cmd.Flags(), &o.simOptions)
	cmd.Flags().StringVar(&o.vary, "vary", "", "parameter to vary: servers, eta, rate or output-tokens (required)")
	cmd.Flags().Float64SliceVar(&o.values, "values", nil, "comma-separated values of the varied parameter (default: see above)")
	cmd.Flags().StringVar(&o.plot, "plot", "", "write the curves to this file (.svg, .png, .pdf or .eps)")
	return cmd
}

type sweepPoint struct {
	Value   float64      `json:"value"`
	Results []sim.Result `json:"results"`
}

func runSweep(ctx context.Context, out, errOut io.Writer, o sweepOptions, requestsSet bool) error {
	base, err := newSimSetup(o.simOptions)
	if err != nil {
		return err
	}
	base.sweep = true
	values := o.values
	if len(values) == 0 {
		if values, err = defaultSweep(o.vary, base); err != nil {
			return err
		}
	}
	setups := make([]*simSetup, len(values))
	for i, v := range values {
		p := base.o
		switch o.vary {
		case "servers", "output-tokens":
			if v != math.Trunc(v) {
				return fmt.Errorf("%w: --values %g: %s must be whole numbers", errUsage, v, o.vary)
			}
			if o.vary == "servers" {
				p.servers = int(v)
			} else {
				p.outputTokens = int(v)
			}
		case "eta":
			p.eta = v
		case "rate":
			p.rate = v
			if !requestsSet {
				p.requests = max(1, int(math.Round(200*v)))
			}
		}
		s := *base
		s.o = p
		s.work = sim.Workload{Rate: p.rate, Requests: p.requests, InputTokens: p.inputTokens, OutputTokens: p.outputTokens}
		if err := s.work.Validate(); err != nil {
			return fmt.Errorf("%w: --values %g: %w", errUsage, v, err)
		}
		if s.top != nil && (p.servers < 1 || p.servers > len(s.top.Nodes)-1 || p.eta < 0 || p.eta > 1) {
			return fmt.Errorf("%w: --values %g: want servers in 1..%d and eta in [0, 1]", errUsage, v, len(s.top.Nodes)-1)
		}
		setups[i] = &s
	}

	bar := progressbar.NewOptions(len(values)*o.runs,
		progressbar.OptionSetWriter(errOut),
		progressbar.OptionSetDescription("sweep "+o.vary),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish())
	var mu sync.Mutex // guards bar
	tick := func() {
		mu.Lock()
		defer mu.Unlock()
		_ = bar.Add(1)
	}
	points := make([]sweepPoint, len(values))
	for i, s := range setups {
		res, err := s.runMany(ctx, tick)
		if err != nil {
			return fmt.Errorf("sweep %s = %g: %w", o.vary, values[i], err)
		}
		points[i] = sweepPoint{Value: values[i], Results: res}
	}
	_ = bar.Finish()

	if o.plot != "" {
		if err := plotSweep(o.plot, o.vary, base.title(), points); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		cal, constants := base.calibrationJSON()
		return enc.Encode(struct {
			Scenario             string           `json:"scenario"`
			Calibration          string           `json:"calibration"`
			CalibrationConstants *sim.Calibration `json:"calibration_constants,omitempty"`
			Vary                 string           `json:"vary"`
			Points               []sweepPoint     `json:"points"`
		}{base.describeSweep(o.vary), cal, constants, o.vary, points})
	}
	fmt.Fprintln(out, base.describeSweep(o.vary))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t", o.vary)
	for _, a := range base.algs {
		fmt.Fprintf(tw, "%s (s/token)\t", a.Name)
	}
	fmt.Fprintln(tw)
	for _, p := range points {
		fmt.Fprintf(tw, "%g\t", p.Value)
		for _, r := range p.Results {
			if r.Runs == 0 {
				fmt.Fprint(tw, "failed\t")
				continue
			}
			fmt.Fprintf(tw, "%.3f\t", r.PerToken)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range points {
		for _, r := range p.Results {
			if len(r.Errors) > 0 {
				fmt.Fprintf(out, "%s at %s = %g failed in %d run(s): %s\n", r.Algorithm, o.vary, p.Value, len(r.Errors), r.Errors[0])
			}
		}
	}
	if o.plot != "" {
		fmt.Fprintf(out, "plot written to %s\n", o.plot)
	}
	return nil
}

// defaultSweep returns the default values of the varied parameter.
func defaultSweep(vary string, s *simSetup) ([]float64, error) {
	var v []float64
	switch vary {
	case "servers":
		if s.top == nil {
			return nil, fmt.Errorf("%w: --vary servers needs --scenario topology", errUsage)
		}
		n := len(s.top.Nodes)
		seen := map[int]bool{}
		for f := 1; f <= 9; f++ {
			c := min(max(1, int(math.Round(float64(f)/10*float64(n)))), n-1)
			if !seen[c] {
				seen[c] = true
				v = append(v, float64(c))
			}
		}
	case "eta":
		if s.top == nil {
			return nil, fmt.Errorf("%w: --vary eta needs --scenario topology", errUsage)
		}
		for i := 1; i <= 10; i++ {
			v = append(v, float64(i)/10)
		}
	case "rate":
		for i := 1; i <= 10; i++ {
			v = append(v, float64(i)/10)
		}
	case "output-tokens":
		v = []float64{32, 64, 128, 256, 512}
	default:
		return nil, fmt.Errorf("%w: --vary %q, want servers, eta, rate or output-tokens", errUsage, vary)
	}
	return v, nil
}

func (s *simSetup) describeSweep(vary string) string {
	return "sweep of " + vary + ": " + s.describe(vary)
}

var sweepLabels = map[string]string{
	"servers":       "number of servers C",
	"eta":           "fraction of A100 servers eta",
	"rate":          "request rate lambda (sessions/s)",
	"output-tokens": "output length l_max (tokens)",
}

// plotSweep draws one line per algorithm: time per token against the
// varied parameter (paper 003 Figs. 6-9).
func plotSweep(path, vary, title string, points []sweepPoint) error {
	p := plot.New()
	p.Title.Text = title + ": time per token vs " + vary
	p.X.Label.Text = sweepLabels[vary]
	p.Y.Label.Text = "average time per token (s)"
	p.Legend.Top = true
	var lines []any
	for i := range points[0].Results {
		var xy plotter.XYs
		for _, pt := range points {
			r := pt.Results[i]
			if r.Runs > 0 {
				xy = append(xy, plotter.XY{X: pt.Value, Y: r.PerToken})
			}
		}
		if len(xy) > 0 {
			lines = append(lines, points[0].Results[i].Algorithm, xy)
		}
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return fmt.Errorf("sim: plot: %w", err)
	}
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("sim: plot: %w", err)
	}
	return nil
}
