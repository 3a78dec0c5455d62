package sim

import (
	"fmt"
	"strings"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/routing"
)

// Admission is what happens when a session's chain has no attention-cache
// room for it yet.
type Admission uint8

const (
	// AdmitWait: each server answers with its wait estimate and reserves
	// the caches (our protocol: "granted | wait estimate"); the session
	// starts as soon as every server of its chain has room. Reserved caches
	// count as held from routing to completion, which is the state WS-RR's
	// eq. (20) assumes and guarantees that admitted sessions always fit.
	AdmitWait Admission = iota + 1
	// AdmitRetry: a server without room rejects the session; the client
	// backs off (MinBackoff * 2^(n-1), capped at MaxBackoff, before attempt
	// n+1), routes again and retries (PETALS' client). Caches are held only
	// by started sessions.
	AdmitRetry
)

// String names the admission rule for tables.
func (a Admission) String() string {
	switch a {
	case AdmitWait:
		return "wait"
	case AdmitRetry:
		return "retry"
	}
	return fmt.Sprintf("admission(%d)", uint8(a))
}

// Algorithm is one placement + routing pair under test.
type Algorithm struct {
	// Name is the name on the command line.
	Name string `json:"name"`
	// Placement names the placement algorithm (placement.Algorithms key).
	Placement string `json:"placement"`
	// Routing names the routing rule: "wsrr" (routing.WSRR), "opt-rr"
	// (routing.OptimizedRR) or "petals" (routing.Petals).
	Routing string `json:"routing"`
	// Admission is how a full server is handled.
	Admission Admission `json:"admission"`
	// Doc says what the algorithm is, for --help.
	Doc string `json:"-"`
	// Extra marks an algorithm that is not in paper 003's evaluation: it
	// runs only when named (--algorithms), not by default.
	Extra bool `json:"-"`
}

// algorithms is the explicit table of the algorithms of paper 003 Sec. 4.
var algorithms = []Algorithm{
	{Name: "proposed", Placement: "cgbp", Routing: "wsrr", Admission: AdmitWait,
		Doc: "CG-BP placement + WS-RR routing (Alg. 2), servers give wait estimates"},
	{Name: "petals", Placement: "petals", Routing: "petals", Admission: AdmitRetry,
		Doc: "PETALS placement (random join order, 4096-token cache budget) + PETALS routing with back-off retries"},
	{Name: "opt-order", Placement: "opt-order", Routing: "petals", Admission: AdmitRetry,
		Doc: "ablation: PETALS placement with servers joining in CG-BP's order"},
	{Name: "opt-number", Placement: "opt-number", Routing: "petals", Admission: AdmitRetry,
		Doc: "ablation: PETALS placement with CG-BP's block counts"},
	{Name: "opt-rr", Placement: "petals", Routing: "opt-rr", Admission: AdmitWait,
		Doc: "ablation: PETALS placement + the myopic optimum of (21) for routing"},
	{Name: "live", Placement: "cgbp-live", Routing: "wsrr", Admission: AdmitWait, Extra: true,
		Doc: "live swarm: servers join in random order, each placed by incremental CG-BP (--blocks auto), never moved; WS-RR routing"},
	{Name: "refined", Placement: "refined", Routing: "wsrr", Admission: AdmitWait, Extra: true,
		Doc: "CG-BP improved by local search over spans and R (placement.Refined), WS-RR routing"},
	{Name: "refined-fp", Placement: "refined", Routing: "wsrr", Admission: AdmitWait, Extra: true,
		Doc: "refined with a fixed-point R: the session time behind R recomputed at the chosen R until R is stable (placement.FixedPointR)"},
	{Name: "live-replan", Placement: "cgbp-replan", Routing: "wsrr", Admission: AdmitWait, Extra: true,
		Doc: "live, then one make-before-break replanning towards CG-BP (placement.Replan, min gain 2%); reports the weight bytes moved"},
}

// Algorithms returns the algorithms the simulator knows, in the paper's
// order (proposed, petals, opt-order, opt-number, opt-rr).
func Algorithms() []Algorithm { return append([]Algorithm(nil), algorithms...) }

// AlgorithmNames returns the names of Algorithms().
func AlgorithmNames() []string {
	names := make([]string, len(algorithms))
	for i, a := range algorithms {
		names[i] = a.Name
	}
	return names
}

// PaperAlgorithmNames returns the names of the algorithms of paper 003's
// evaluation (those not Extra), the default set of `swarm sim`.
func PaperAlgorithmNames() []string {
	var names []string
	for _, a := range algorithms {
		if !a.Extra {
			names = append(names, a.Name)
		}
	}
	return names
}

// LookupAlgorithm returns the algorithm called name; errors wrap
// ErrBadConfig and list the known names.
func LookupAlgorithm(name string) (Algorithm, error) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("%w: unknown algorithm %q (want one of %s)", ErrBadConfig, name, strings.Join(AlgorithmNames(), ", "))
}

// usesR reports whether the placement needs the design parameter R.
func (a Algorithm) usesR() bool {
	switch a.Placement {
	case "cgbp", "opt-number", "opt-order", "cgbp-live", "cgbp-replan", "refined":
		return true
	}
	return false
}

// petalsClient reports whether the algorithm's servers are placed by
// PETALS' own placement (petals, opt-order, opt-rr): their sessions are
// PETALS client sessions, which reserve PetalsConfig.SessionTokens.
func (a Algorithm) petalsClient() bool {
	return a.Placement == "petals" || a.Placement == "opt-order"
}

// place runs the algorithm's placement. For "cgbp-replan" it also returns
// the replanning (placement.LiveReplan with placement.DefaultMinGain), whose
// steps and bytes Run reports; nil for the others.
func (a Algorithm) place(in placement.Input) (placement.Plan, *placement.Replanning, error) {
	if a.Placement == "cgbp-replan" {
		p, r, err := placement.LiveReplan(in, placement.ReplanOptions{MinGain: placement.DefaultMinGain})
		return p, &r, err
	}
	f, err := placement.Lookup(a.Placement)
	if err != nil {
		return placement.Plan{}, nil, err
	}
	p, err := f(in)
	return p, nil, err
}

// RouteFunc routes one session: servers is the snapshot, ping the
// server-to-server round trip times among them in seconds (PETALS routing
// only; nil means unknown). Errors are routing's (routing.ErrNoRoute, ...).
type RouteFunc func(servers []routing.Server, req routing.Request, ping [][]float64) (routing.Route, error)

// ForPlacement returns the algorithm that pairs the placement called name
// with its routing: the first row of Algorithms whose Placement is name
// ("cgbp" gives proposed, routed by WS-RR; "petals", "opt-order" and
// "opt-number" are routed by PETALS). A placement without a row, such as
// the exhaustive "optimal", is routed by WS-RR like CG-BP, under its own
// name; ForPlacement does not check that the placement exists.
func ForPlacement(name string) Algorithm {
	for _, a := range algorithms {
		if a.Placement == name {
			return a
		}
	}
	return Algorithm{Name: name, Placement: name, Routing: "wsrr", Admission: AdmitWait}
}

// Router returns the routing function of this algorithm with the PETALS
// constants p (used by PETALS routing only). The error wraps ErrBadConfig
// for a Routing this package does not know.
func (a Algorithm) Router(p PetalsConfig) (RouteFunc, error) {
	switch a.Routing {
	case "wsrr":
		return func(s []routing.Server, r routing.Request, _ [][]float64) (routing.Route, error) {
			return routing.WSRR(s, r)
		}, nil
	case "opt-rr":
		return func(s []routing.Server, r routing.Request, _ [][]float64) (routing.Route, error) {
			return routing.OptimizedRR(s, r)
		}, nil
	case "petals":
		return func(s []routing.Server, r routing.Request, ping [][]float64) (routing.Route, error) {
			return routing.Petals(s, r, routing.PetalsParams{Overhead: p.HopOverhead, AllocPenalty: p.AllocPenalty, Ping: ping})
		}, nil
	}
	return nil, fmt.Errorf("%w: algorithm %s: unknown routing %q (want wsrr, opt-rr or petals)", ErrBadConfig, a.Name, a.Routing)
}

// Placement processes of the proposed algorithm (--placement): how the
// CG-BP spans come about.
const (
	// ProcessBatch: CG-BP over the whole fleet at once, servers in the
	// global order of Alg. 2 (placement "cgbp"; the paper).
	ProcessBatch = "batch"
	// ProcessIncremental: servers join one at a time in random order, each
	// placed by incremental CG-BP, never moved (placement "cgbp-live", what
	// `serve --blocks auto` does today).
	ProcessIncremental = "incremental"
	// ProcessLive: incremental, then the live planner's make-before-break
	// replanning (placement.LiveReplan, placement "cgbp-replan"); the
	// weight bytes it moves are reported (Result.MovedBytes).
	ProcessLive = "live"
)

// PlacementProcesses lists the --placement values.
func PlacementProcesses() []string { return []string{ProcessBatch, ProcessIncremental, ProcessLive} }

// WithPlacementProcess returns algs with the proposed algorithm's
// placement replaced by the given process (the same placement/ code as the
// live swarm); the others are unchanged. Errors wrap ErrBadConfig for an
// unknown process.
func WithPlacementProcess(algs []Algorithm, process string) ([]Algorithm, error) {
	var p string
	switch process {
	case ProcessBatch, "":
		p = "cgbp"
	case ProcessIncremental:
		p = "cgbp-live"
	case ProcessLive:
		p = "cgbp-replan"
	default:
		return nil, fmt.Errorf("%w: placement process %q, want %s", ErrBadConfig, process, strings.Join(PlacementProcesses(), ", "))
	}
	out := append([]Algorithm(nil), algs...)
	for i := range out {
		if out[i].Name == "proposed" {
			out[i].Placement = p
		}
	}
	return out, nil
}
