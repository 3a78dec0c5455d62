package experiment

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/swarmllm/swarm/sim"
	"github.com/swarmllm/swarm/topologies"
)

// ErrBadOptions is matched (errors.Is) by every error for Options that
// describe no experiment; such errors are an *OptionError.
var ErrBadOptions = errors.New("experiment: bad options")

// OptionError is an option out of range. Its text names the option by its
// `swarm sim` flag and says what is wanted; it matches ErrBadOptions
// without repeating that sentinel's text, so a CLI can print it as a usage
// error as it stands.
type OptionError struct {
	// Err says which option and why (and wraps sim.ErrBadConfig for a bad
	// workload).
	Err error
}

func (e *OptionError) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e *OptionError) Unwrap() error { return e.Err }

// Is reports whether target is ErrBadOptions.
func (e *OptionError) Is(target error) bool { return target == ErrBadOptions }

// badOption returns an *OptionError formatted as fmt.Errorf does.
func badOption(format string, args ...any) error {
	return &OptionError{Err: fmt.Errorf(format, args...)}
}

// Options describe one experiment; each field is the `swarm sim` flag of
// the same name.
type Options struct {
	// Scenario is "clustered" (paper 003 Table 2: 2 A100s, 7 MIGs, 3
	// clusters) or "topology" (servers at random nodes of Topology).
	Scenario string
	// Topology is a Repetita .graph or Topology Zoo .graphml file (topology
	// scenario only).
	Topology string
	// GraphMLDelays is how a .graphml file's link delays are made: "fibre"
	// (great circle at 2/3 c) or "repetita" (Repetita's converter).
	GraphMLDelays string
	// Servers is C, the servers placed at random nodes (topology scenario;
	// 0: 40% of the nodes).
	Servers int
	// Eta is the fraction of A100 servers, the rest MIGs (topology
	// scenario), in [0, 1].
	Eta float64
	// ClientCluster is the client's cluster in the clustered scenario: 0
	// remote, 1 beside the A100s, 2 beside the MIGs.
	ClientCluster int
	// Rate is lambda, the Poisson session arrival rate per second.
	Rate float64
	// Requests is N_R, the sessions per run.
	Requests int
	// OutputTokens is l_max and InputTokens lI, tokens per session.
	OutputTokens, InputTokens int
	// Seed seeds the runs: run k draws from the PCG stream (Seed, k).
	Seed uint64
	// Runs is the number of Monte Carlo runs averaged (>= 1).
	Runs int
	// Algorithms are sim algorithm names (sim.AlgorithmNames), in the
	// order of the results.
	Algorithms []string
	// Calibration is sim.CalibrationNone or sim.CalibrationMATLAB.
	Calibration string
	// Parallel is the number of runs simulated at once (>= 1).
	Parallel int
	// Preset names a deployment of paper 003 (Presets) whose values the
	// other options were filled from (ApplyPreset); "" for none. The
	// paper's numbers are shown only when the fleet still matches it.
	Preset string
	// ServerModel is how servers step concurrent sessions: "independent"
	// (the paper), "serial" (PETALS) or "batched" (our server, the
	// default).
	ServerModel string
	// BatchGrowth is the assumed relative growth of a batched step per
	// extra session for ServerModel "batched" (sim.AssumedBatchCurve).
	BatchGrowth float64
	// LinkCost is the WS-RR / opt-rr hop cost: "eq8" (the paper, default)
	// or "eq4" (the live client).
	LinkCost string
	// PetalsSessionTokens is the cache tokens a PETALS client session
	// reserves on each block (0: lI + l_max).
	PetalsSessionTokens int
	// Placement is the proposed algorithm's placement process: "batch"
	// (CG-BP, the paper), "incremental" (join order) or "live"
	// (incremental + replanning).
	Placement string
	// MoveBandwidth is how fast a server loads replanned weights, bytes
	// per second (sim.Fleet.MoveBandwidth; 0: instantaneous); it matters
	// for the live placement process only.
	MoveBandwidth float64
	// Fleet is a `swarm plan` fleet file: the servers, their memory, tau
	// and RTTs replace the scenario (Scenario becomes "fleet"). This
	// package reads no fleet or model format: the caller loads the file
	// into FleetData (sim.FleetFromInput).
	Fleet     string
	FleetData *sim.Fleet
	// Model is a model file (ModelInfo JSON or any model swarm reads)
	// that replaces BLOOM-176B; the caller loads it into ModelData
	// (sim.ModelFromInfo).
	Model     string
	ModelData *sim.ModelSpec
}

// DefaultOptions returns the clustered scenario with the client remote,
// 0.1 sessions/s, 100 requests of 20 + 128 tokens, 20 runs from seed 1,
// every algorithm, no calibration, GOMAXPROCS runs at once (and, for the
// topology scenario, fibre delays, 40% of the nodes as servers, eta 0.2),
// batched servers (3% per extra session, assumed), the paper's link cost
// (8), PETALS sessions reserving lI + l_max tokens, batch CG-BP.
func DefaultOptions() Options {
	return Options{
		Scenario:      "clustered",
		GraphMLDelays: "fibre",
		Eta:           0.2,
		Rate:          0.1,
		Requests:      100,
		OutputTokens:  128,
		InputTokens:   20,
		Seed:          1,
		Runs:          20,
		Algorithms:    sim.PaperAlgorithmNames(),
		Calibration:   sim.CalibrationNone,
		Parallel:      runtime.GOMAXPROCS(0),
		ServerModel:   sim.ServerBatched.String(),
		BatchGrowth:   sim.DefaultBatchGrowth,
		LinkCost:      sim.LinkAllTokens.String(),
		Placement:     sim.ProcessBatch,
	}
}

// Experiment is a validated scenario: the workload, the algorithms and,
// for the topology scenario, the loaded topology and its RTT matrix.
type Experiment struct {
	o     Options
	algs  []sim.Algorithm
	work  sim.Workload
	top   *topologies.Topology
	rtt   *topologies.RTTMatrix
	sweep bool // a point of a Sweep (the MATLAB sweeps' constants)

	serverModel sim.ServerModel
	linkCost    sim.LinkCost
	preset      *Preset  // Options.Preset, nil for none
	warnings    []string // why the paper's numbers are not comparable
}

// New validates o and loads its topology. Errors: *OptionError
// (ErrBadOptions) for options out of range, or the topology loader's
// errors for a file that cannot be read.
func New(o Options) (*Experiment, error) {
	e := &Experiment{o: o, work: workload(o)}
	if err := e.work.Validate(); err != nil {
		return nil, &OptionError{Err: err}
	}
	switch {
	case o.Runs < 1:
		return nil, badOption("--runs %d, want >= 1", o.Runs)
	case o.Parallel < 1:
		return nil, badOption("--parallel %d, want >= 1", o.Parallel)
	case len(o.Algorithms) == 0:
		return nil, badOption("--algorithms is empty (want some of %s)", strings.Join(sim.AlgorithmNames(), ","))
	}
	switch o.Calibration {
	case sim.CalibrationNone, sim.CalibrationMATLAB:
	default:
		return nil, badOption("--calibration %q, want %s or %s", o.Calibration, sim.CalibrationNone, sim.CalibrationMATLAB)
	}
	for _, name := range o.Algorithms {
		a, err := sim.LookupAlgorithm(strings.TrimSpace(name))
		if err != nil {
			return nil, badOption("--algorithms: %w", err)
		}
		e.algs = append(e.algs, a)
	}
	var err error
	if e.algs, err = sim.WithPlacementProcess(e.algs, o.Placement); err != nil {
		return nil, badOption("--placement: %w", err)
	}
	if e.serverModel, err = sim.ParseServerModel(o.ServerModel); err != nil {
		return nil, badOption("--server-model: %w", err)
	}
	if e.linkCost, err = sim.ParseLinkCost(o.LinkCost); err != nil {
		return nil, badOption("--link-cost: %w", err)
	}
	switch {
	case math.IsNaN(o.BatchGrowth) || math.IsInf(o.BatchGrowth, 0) || o.BatchGrowth < 0:
		return nil, badOption("--batch-growth %g, want a finite fraction >= 0", o.BatchGrowth)
	case math.IsNaN(o.MoveBandwidth) || math.IsInf(o.MoveBandwidth, 0) || o.MoveBandwidth < 0:
		return nil, badOption("--move-bandwidth %g, want finite bytes/s >= 0 (0: instantaneous)", o.MoveBandwidth)
	case o.PetalsSessionTokens < 0:
		return nil, badOption("--petals-session-tokens %d, want >= 0 (0: lI + l_max)", o.PetalsSessionTokens)
	}
	if o.Preset != "" {
		if e.preset, err = LookupPreset(o.Preset); err != nil {
			return nil, err
		}
	}
	if o.Fleet != "" {
		if o.FleetData == nil {
			return nil, badOption("--fleet %s: the file was not loaded (a caller must set FleetData)", o.Fleet)
		}
		if o.Topology != "" {
			return nil, badOption("--fleet and --topology exclude each other")
		}
		e.o.Scenario = "fleet"
	}
	if o.Model != "" && o.ModelData == nil {
		return nil, badOption("--model %s: the file was not loaded (a caller must set ModelData)", o.Model)
	}
	switch e.o.Scenario {
	case "fleet":
		if o.FleetData == nil {
			return nil, badOption("--scenario fleet needs --fleet FILE")
		}
	case "clustered":
		if o.Topology != "" {
			return nil, badOption("--topology is for --scenario topology")
		}
		if _, err := sim.Clustered(o.ClientCluster); err != nil {
			return nil, badOption("--client-cluster: %w", err)
		}
	case "topology":
		if err := e.loadTopology(); err != nil {
			return nil, err
		}
	default:
		return nil, badOption("--scenario %q, want clustered or topology (or --fleet FILE)", o.Scenario)
	}
	e.warnings = e.checkPaperMatch()
	return e, nil
}

// workload is the sim workload of o.
func workload(o Options) sim.Workload {
	return sim.Workload{Rate: o.Rate, Requests: o.Requests, InputTokens: o.InputTokens, OutputTokens: o.OutputTokens}
}

// loadTopology loads the topology scenario's file and checks the servers
// and eta against it.
func (e *Experiment) loadTopology() error {
	o := e.o
	if o.Topology == "" {
		return badOption("--scenario topology needs --topology FILE (.graph or .graphml)")
	}
	top, err := loadTopology(o.Topology, o.GraphMLDelays)
	if err != nil {
		return err
	}
	e.top = top
	if e.rtt, err = top.RTT(); err != nil {
		return err
	}
	if o.Servers == 0 {
		e.o.Servers = max(1, int(math.Round(0.4*float64(len(top.Nodes)))))
	}
	if e.o.Servers < 1 || e.o.Servers > len(top.Nodes)-1 {
		return badOption("--servers %d, want 1..%d for %s (%d nodes, one left for the client)",
			e.o.Servers, len(top.Nodes)-1, top.Name, len(top.Nodes))
	}
	if math.IsNaN(o.Eta) || o.Eta < 0 || o.Eta > 1 {
		return badOption("--eta %g, want a fraction in [0, 1]", o.Eta)
	}
	return nil
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
			return nil, badOption("--graphml-delays %q, want fibre or repetita", delays)
		}
		return topologies.LoadGraphML(path, opts...)
	}
	return nil, badOption("--topology %s: want a Repetita .graph or a Topology Zoo .graphml file", path)
}

// Options returns the options, with Servers resolved for the topology
// scenario.
func (e *Experiment) Options() Options { return e.o }

// Algorithms returns the algorithms, in the order of the results.
func (e *Experiment) Algorithms() []sim.Algorithm { return append([]sim.Algorithm(nil), e.algs...) }
