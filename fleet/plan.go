package fleet

import (
	"errors"
	"fmt"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/sim"
	"github.com/swarmllm/swarm/swarm"
)

// DefaultMaxLength is l_max, in tokens, when neither Options nor the file
// gives one.
const DefaultMaxLength = 128

// ErrNoSessions is returned by ChooseSessions for a file that gives neither
// target_sessions nor a positive arrival_rate or session_time.
var ErrNoSessions = errors.New("fleet: no target sessions")

// ChooseSessions returns R from the file, and where it came from for
// reports: target_sessions, or round(mean + std) of the Poisson arrivals
// during one session capped by (19) (placement.ChooseR, paper 003
// Sec. 3.3.1). Errors: ErrNoSessions, or placement.ChooseR's
// (placement.ErrInfeasible when not even R = 1 fits) wrapped.
func (f Fleet) ChooseSessions() (r int, source string, err error) {
	switch {
	case f.TargetSessions > 0:
		return f.TargetSessions, "target_sessions", nil
	case f.ArrivalRate > 0 || f.SessionTime > 0:
		mean, std := placement.PoissonLoad(f.ArrivalRate, f.SessionTime)
		r, err := placement.ChooseR(f.Input, mean, std)
		if err != nil {
			return 0, "", fmt.Errorf("choosing R from arrival_rate %g/s and session_time %g s: %w", f.ArrivalRate, f.SessionTime, err)
		}
		in := f.Input
		in.Sessions = r
		return r, fmt.Sprintf("mean %.4g + std %.4g of arrivals per session, capped by (19) at %d", mean, std, placement.MaxSessions(in)), nil
	}
	return 0, "", ErrNoSessions
}

// Options choose the plan Fleet.Plan runs.
type Options struct {
	// Algorithm names the placement (a placement.Algorithms key); the
	// routing is the one the simulator pairs with it (sim.ForPlacement).
	Algorithm string
	// Sessions is R, the concurrent sessions to plan for (>= 1).
	Sessions int
	// Source says where R came from, for WriteText.
	Source string
	// MaxLength is l_max in tokens, which weighs waiting against per-token
	// time in WS-RR's link cost; 0 takes the file's max_length, else
	// DefaultMaxLength.
	MaxLength int
}

// Plan is a fleet placed by one algorithm, with the bounds on the average
// per-token time and the route each client's next session takes on the
// idle swarm.
type Plan struct {
	// Input is the placement input, with Sessions = R.
	Input placement.Input
	// Algorithm is the placement and its routing (Algorithm.Placement is
	// Options.Algorithm).
	Algorithm sim.Algorithm
	// Source says where R came from.
	Source string
	// MaxLength is the l_max the routes were chosen for, in tokens.
	MaxLength int
	// Placement is the plan; its Spans are nil when the algorithm gave
	// none.
	Placement placement.Plan
	// Infeasible is nil when every block is hosted, else the error
	// (wrapping placement.ErrInfeasible) that says why.
	Infeasible error
	// UpperBound is (17) on CG-BP's average per-token time and LowerBound
	// (B.8) on any placement's, in seconds; nil when (18) fails or the
	// servers cannot hold one session.
	UpperBound, LowerBound *float64
	// SessionBound is the exact single-session lower bound on any
	// placement's average per-token time (placement.SessionBound), in
	// seconds; nil when no chain holds one session.
	SessionBound *float64
	// ClientLowerBound[c] is (B.8) for client c alone, in seconds, or nil.
	ClientLowerBound []*float64
	// Routes[c] is client c's route on the idle swarm, or nil with the
	// reason in RouteErrs[c] (nil too when there is no placement).
	Routes    []*routing.Route
	RouteErrs []error
}

// Plan places the fleet with o.Algorithm for R = o.Sessions, computes the
// bounds and routes one session per client on the idle swarm. An
// infeasible placement is not an error (Plan.Infeasible). Errors: an
// unknown algorithm (placement.ErrUnknownAlgorithm), R < 1
// (placement.ErrBadInput), or another failure of the placement, wrapped
// as "plan NAME: ...".
func (f Fleet) Plan(o Options) (*Plan, error) {
	place, err := placement.Lookup(o.Algorithm)
	if err != nil {
		return nil, err
	}
	if o.Sessions < 1 {
		return nil, fmt.Errorf("%w: R = %d sessions, want >= 1", placement.ErrBadInput, o.Sessions)
	}
	p := &Plan{Input: f.Input, Algorithm: sim.ForPlacement(o.Algorithm), Source: o.Source, MaxLength: DefaultMaxLength}
	p.Input.Sessions = o.Sessions
	switch {
	case o.MaxLength > 0:
		p.MaxLength = o.MaxLength
	case f.MaxLength > 0:
		p.MaxLength = f.MaxLength
	}
	p.Placement, p.Infeasible = place(p.Input)
	if p.Infeasible != nil && !errors.Is(p.Infeasible, placement.ErrInfeasible) {
		return nil, fmt.Errorf("plan %s: %w", o.Algorithm, p.Infeasible)
	}
	if ub, err := placement.UpperBound(p.Input); err == nil {
		p.UpperBound = &ub
	}
	if lb, err := placement.LowerBound(p.Input); err == nil {
		p.LowerBound = &lb
	}
	if sb, err := placement.SessionBound(p.Input); err == nil {
		p.SessionBound = &sb
	}
	p.ClientLowerBound = make([]*float64, len(p.Input.Clients))
	for c := range p.Input.Clients {
		if lb, err := placement.ClientLowerBound(p.Input, c); err == nil {
			p.ClientLowerBound[c] = &lb
		}
	}
	if err := p.route(); err != nil {
		return nil, err
	}
	return p, nil
}

// route routes one session per client on the idle swarm with the
// algorithm's routing and PETALS' default constants.
func (p *Plan) route() error {
	in := p.Input
	p.Routes = make([]*routing.Route, len(in.Clients))
	p.RouteErrs = make([]error, len(in.Clients))
	if p.Placement.Spans == nil {
		return nil
	}
	route, err := p.Algorithm.Router(sim.DefaultPetalsConfig())
	if err != nil {
		return err
	}
	req := routing.Request{Blocks: in.Model.Blocks, MaxLength: p.MaxLength}
	for c := range in.Clients {
		var servers []routing.Server
		for j, s := range in.Servers {
			if p.Placement.Spans[j].Empty() {
				continue
			}
			servers = append(servers, routing.Server{
				Name: s.Name, Span: p.Placement.Spans[j], Tau: s.Tau, RTT: s.RTT[c], CacheSlots: p.Placement.CacheSlots[j],
			})
		}
		r, err := route(servers, req, nil)
		if err != nil {
			p.RouteErrs[c] = err
			continue
		}
		p.Routes[c] = &r
	}
	return nil
}

// Span returns the span the plan gives server j (empty when the algorithm
// gave no plan).
func (p *Plan) Span(j int) swarm.Span {
	if p.Placement.Spans == nil {
		return swarm.Span{}
	}
	return p.Placement.Spans[j]
}
