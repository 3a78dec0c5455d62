package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/swarmllm/swarm/sim"
)

// Sweep is an experiment run once per value of one option (paper 003
// Figs. 6-9).
type Sweep struct {
	// Vary is the option varied: "servers", "eta", "rate" or
	// "output-tokens" (its `swarm sim` flag).
	Vary string
	// Values are its values, in order.
	Values []float64
	base   *Experiment
	points []*Experiment
}

// Point is the averaged results at one value of a Sweep.
type Point struct {
	Value   float64      `json:"value"`
	Results []sim.Result `json:"results"`
	// Decomposition is the gain of proposed over petals at this point
	// (sim.Decompose), when both ran.
	Decomposition *sim.Decomposition `json:"decomposition,omitempty"`
}

// SweepReport is the JSON document of a sweep (`swarm sim sweep --json`).
type SweepReport struct {
	// Schema is SchemaVersion; Config the sweep's options (the varied
	// one at its base value).
	Schema string `json:"schema"`
	Config Config `json:"config"`
	// Warnings are Experiment.Warnings of the base.
	Warnings []string `json:"warnings,omitempty"`
	// Scenario is the sweep's one-line header.
	Scenario string `json:"scenario"`
	// Calibration and CalibrationConstants are as in Report.
	Calibration          string           `json:"calibration"`
	CalibrationConstants *sim.Calibration `json:"calibration_constants,omitempty"`
	Vary                 string           `json:"vary"`
	Points               []Point          `json:"points"`
}

// NewSweep validates a sweep of o over values of the option vary (one
// DefaultValues knows, servers and eta in the topology scenario only); nil
// values take DefaultValues. Unless keepRequests, a rate sweep runs
// N_R = round(200 rate) sessions per point (Fig. 8). Errors are New's
// and *OptionError (ErrBadOptions) for values out of range.
func NewSweep(o Options, vary string, values []float64, keepRequests bool) (*Sweep, error) {
	base, err := New(o)
	if err != nil {
		return nil, err
	}
	base.sweep = true
	defaults, err := base.DefaultValues(vary) // also checks vary against the scenario
	if err != nil {
		return nil, err
	}
	if len(values) == 0 {
		values = defaults
	}
	s := &Sweep{Vary: vary, Values: values, base: base}
	for _, v := range values {
		p := base.o
		switch vary {
		case "servers", "output-tokens":
			if v != math.Trunc(v) {
				return nil, badOption("--values %g: %s must be whole numbers", v, vary)
			}
			if vary == "servers" {
				p.Servers = int(v)
			} else {
				p.OutputTokens = int(v)
			}
		case "eta":
			p.Eta = v
		case "rate":
			p.Rate = v
			if !keepRequests {
				p.Requests = max(1, int(math.Round(200*v)))
			}
		}
		e := *base
		e.o, e.work = p, workload(p)
		if err := e.work.Validate(); err != nil {
			return nil, badOption("--values %g: %w", v, err)
		}
		if e.top != nil && (p.Servers < 1 || p.Servers > len(e.top.Nodes)-1 || p.Eta < 0 || p.Eta > 1) {
			return nil, badOption("--values %g: want servers in 1..%d and eta in [0, 1]", v, len(e.top.Nodes)-1)
		}
		s.points = append(s.points, &e)
	}
	return s, nil
}

// DefaultValues returns the values of Figs. 6-9: servers 10%..90% of the
// nodes (Fig. 6), eta 0.1..1 (Fig. 7), rate 0.1..1 per second (Fig. 8),
// output-tokens 32..512 (Fig. 9). servers and eta need the topology
// scenario. Errors are *OptionError (ErrBadOptions).
func (e *Experiment) DefaultValues(vary string) ([]float64, error) {
	var v []float64
	switch vary {
	case "servers":
		if e.top == nil {
			return nil, badOption("--vary servers needs --scenario topology")
		}
		n := len(e.top.Nodes)
		seen := map[int]bool{}
		for f := 1; f <= 9; f++ {
			c := min(max(1, int(math.Round(float64(f)/10*float64(n)))), n-1)
			if !seen[c] {
				seen[c] = true
				v = append(v, float64(c))
			}
		}
	case "eta":
		if e.top == nil {
			return nil, badOption("--vary eta needs --scenario topology")
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
		return nil, badOption("--vary %q, want servers, eta, rate or output-tokens", vary)
	}
	return v, nil
}

// Runs is the number of runs of the whole sweep (for progress bars).
func (s *Sweep) Runs() int { return len(s.points) * s.base.o.Runs }

// Algorithms returns the algorithms, in the order of each point's results.
func (s *Sweep) Algorithms() []sim.Algorithm { return s.base.Algorithms() }

// Run runs the points one after the other (each as Experiment.Run, with
// tick called after every run). Errors are Experiment.Run's, naming the
// point.
func (s *Sweep) Run(ctx context.Context, tick func()) ([]Point, error) {
	points := make([]Point, len(s.points))
	for i, e := range s.points {
		res, err := e.Run(ctx, tick)
		if err != nil {
			return nil, fmt.Errorf("sweep %s = %g: %w", s.Vary, s.Values[i], err)
		}
		points[i] = Point{Value: s.Values[i], Results: res}
		if d, ok := decomposition(res, e.o.OutputTokens); ok {
			points[i].Decomposition = &d
		}
	}
	return points, nil
}

// Describe is the sweep's one-line header.
func (s *Sweep) Describe() string { return "sweep of " + s.Vary + ": " + s.base.describe(s.Vary) }

// Report returns the JSON document of points.
func (s *Sweep) Report(points []Point) SweepReport {
	r := SweepReport{Schema: SchemaVersion, Config: s.base.Config(), Warnings: s.base.Warnings(), Scenario: s.Describe(), Vary: s.Vary, Points: points}
	r.Calibration, r.CalibrationConstants = s.base.calibrationJSON()
	return r
}

// WriteJSON writes Report(points), indented.
func (s *Sweep) WriteJSON(w io.Writer, points []Point) error { return writeJSON(w, s.Report(points)) }

// WriteText writes the header, a table of the seconds per token of each
// algorithm at each value ("failed" where it failed in every run), and a
// line per point and algorithm that failed in some run.
func (s *Sweep) WriteText(w io.Writer, points []Point) error {
	fmt.Fprintln(w, s.Describe())
	for _, warn := range s.base.warnings {
		fmt.Fprintln(w, "WARNING: "+warn)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t", s.Vary)
	for _, a := range s.base.algs {
		fmt.Fprintf(tw, "%s (s/token)\t", a.Name)
	}
	gain := len(points) > 0 && points[0].Decomposition != nil
	if gain {
		fmt.Fprint(tw, "gain from first token\t")
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
		if gain {
			if p.Decomposition != nil {
				fmt.Fprintf(tw, "%.0f%%\t", 100*p.Decomposition.FirstShare)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range points {
		for _, r := range p.Results {
			if len(r.Errors) > 0 {
				fmt.Fprintf(w, "%s at %s = %g failed in %d run(s): %s\n", r.Algorithm, s.Vary, p.Value, len(r.Errors), r.Errors[0])
			}
		}
	}
	return nil
}
