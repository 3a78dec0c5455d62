package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// RouteRequest says what a route must cover and which candidates it may
// use. It is the one input of Route, which the client (Open, failover) and
// the ingress (with its allowlist and replicas) share.
type RouteRequest struct {
	// Model is the client's model: L and the name of what is served.
	Model swarm.ModelInfo
	// Need is the blocks the chain must cover: [0, L) for a new session,
	// a failed hop's blocks for a failover.
	Need swarm.Span
	// MaxLength is the session's tokens, l^I_max + l_max (>= 1).
	MaxLength int
	// Exclude maps the endpoints (Endpoint.Inference) this session must
	// not use again to why they failed.
	Exclude map[string]error
	// Providers is the trusted-provider allowlist (paper 000 Sec. 3.3
	// "Client-side filtering"); nil allows every provider.
	Providers []string
	// Replicas lets full-range replicas (text in, text out) route as a
	// single [0, L) hop when Need is the whole model; without it they are
	// left out (a client that speaks hidden states cannot use them).
	Replicas bool
}

// Hop is one server of a planned route and the blocks it processes.
type Hop struct {
	// Candidate is the server as probed.
	Candidate Candidate
	// Span is the blocks it processes (its span clipped to the need).
	Span swarm.Span
}

// Plan is a route chosen by Route from probed candidates: the hops in
// order and what they were chosen from. Client.OpenPlan opens it without
// probing or routing again.
type Plan struct {
	// Hops is the chain, or one [0, L) hop of a full-range replica.
	Hops []Hop
	// Cost is WS-RR's cost of the route (paper 003 Alg. 2 line 12), in
	// seconds.
	Cost float64
}

// Replica returns the replica of a plan that is one full-range hop, or nil
// for a chain of block servers.
func (p Plan) Replica() *Candidate {
	if len(p.Hops) == 1 && p.Hops[0].Candidate.Info.FullRange {
		return &p.Hops[0].Candidate
	}
	return nil
}

// Kind is "replica" or "chain", the route label of metrics and headers.
func (p Plan) Kind() string {
	if p.Replica() != nil {
		return "replica"
	}
	return "chain"
}

// String names the route's hops: "chain: URL 0:2 -> URL 2:5".
func (p Plan) String() string {
	parts := make([]string, len(p.Hops))
	for i, h := range p.Hops {
		parts[i] = h.Candidate.Endpoint.Inference + " " + h.Span.String()
	}
	return p.Kind() + ": " + strings.Join(parts, " -> ")
}

// NoChainError says why no route covers the blocks a session needs.
type NoChainError struct {
	// Need is the blocks a chain had to cover ([0, L) for a new session,
	// a failed hop's blocks for a failover).
	Need swarm.Span
	// Uncovered are the blocks of Need that no usable server hosts.
	Uncovered []swarm.Span
	// Unusable lists the candidates left out and why ("URL: reason").
	Unusable []string
	// Routing is routing.WSRR's error when the blocks are covered but no
	// chain is feasible (e.g. every chain has a server whose cache can
	// never hold the session); nil otherwise.
	Routing error
}

func (e *NoChainError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v covers blocks %s", ErrNoChain, e.Need)
	if len(e.Uncovered) > 0 {
		fmt.Fprintf(&b, ": no usable server hosts blocks %s", spansString(e.Uncovered))
	} else if e.Routing != nil {
		fmt.Fprintf(&b, ": %v", e.Routing)
	}
	if len(e.Unusable) > 0 {
		fmt.Fprintf(&b, " (left out: %s)", strings.Join(e.Unusable, "; "))
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrNoChain) true, and exposes the routing
// error.
func (e *NoChainError) Unwrap() []error {
	if e.Routing != nil {
		return []error{ErrNoChain, e.Routing}
	}
	return []error{ErrNoChain}
}

// spansString joins spans as "2:3, 4:6".
func spansString(spans []swarm.Span) string {
	parts := make([]string, len(spans))
	for i, s := range spans {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// Allowed reports whether a provider is on a trusted-provider allowlist;
// a nil allowlist allows every provider (paper 000 Sec. 3.3 "Client-side
// filtering").
func Allowed(provider string, allow []string) bool {
	return allow == nil || slices.Contains(allow, provider)
}

// Route chooses the route of a session over probed candidates with WS-RR
// (routing.WSRR, paper 003 Alg. 2 lines 10-13) on ONE routing graph: the
// feasible graph of Lemma 3.1 restricted to req.Need (each block server's
// span clipped to Need, blocks renumbered from Need.Start), where every
// edge into server j costs t^W_ij + l_max (t_cj + tau_j k_j) with the tau,
// cache room (routing.FromServerInfo: the capacity the SERVER advertises)
// and session loads (eq. 20) it advertised and the RTT measured when it
// was probed. A full-range replica (with req.Replicas, for a whole-model
// Need) is a [0, L) hop with unlimited cache (it admits requests itself)
// and its RTT amortized over the session (RTT / MaxLength), since text
// goes to it once and tokens stream back.
//
// A replica takes text, not hidden states, so a route that enters a
// replica after block servers cannot run; when WS-RR returns such a hybrid
// route, the best pure chain and the best replica are routed separately
// and the cheaper (by WS-RR cost) wins.
//
// Candidates are left out when excluded, unusable (Err), not allowed,
// unable to hold MaxLength tokens, or replicas where none may serve. The
// error is a *NoChainError (errors.Is ErrNoChain) naming the uncovered
// blocks and why each candidate was left out, or ErrArgument.
func Route(req RouteRequest, cands []Candidate) (Plan, error) {
	need := req.Need
	if need.Empty() || req.MaxLength < 1 {
		return Plan{}, fmt.Errorf("%w: route blocks %s for %d tokens", ErrArgument, need, req.MaxLength)
	}
	whole := need == req.Model.Blocks()
	var servers []routing.Server
	var picked []Candidate
	var left []string
	for _, c := range cands {
		name := c.Endpoint.Inference
		reason := ""
		switch {
		case req.Exclude[name] != nil:
			reason = fmt.Sprintf("failed earlier: %v", req.Exclude[name])
		case c.Err != nil:
			reason = c.Err.Error()
		case c.Info.State != api.StateServing:
			reason = fmt.Sprintf("server is %q, not admitting sessions", c.Info.State)
		case c.Info.FullRange && !req.Replicas:
			reason = "full-range (text) servers are not supported by this client"
		case c.Info.FullRange && !whole:
			continue // a replica serves whole sessions, not a failed hop's blocks
		case !Allowed(c.Info.Provider, req.Providers):
			reason = fmt.Sprintf("provider %q is not in the allowlist %q", c.Info.Provider, req.Providers)
		case c.Info.MaxLength > 0 && req.MaxLength > c.Info.MaxLength:
			reason = fmt.Sprintf("sessions of at most %d tokens, this one needs %d", c.Info.MaxLength, req.MaxLength)
		}
		if reason != "" {
			left = append(left, name+": "+reason)
			continue
		}
		rtt := c.RTT.Seconds()
		s := routing.FromServerInfo(c.Info.ServerInfo, req.MaxLength, 1, rtt, rtt, 0)
		if c.Info.FullRange {
			s.RTT, s.Span = rtt/float64(req.MaxLength), req.Model.Blocks()
		}
		clip := s.Span.Intersect(need)
		if clip.Empty() {
			continue
		}
		s.Name = name
		s.Span = swarm.Span{Start: clip.Start - need.Start, End: clip.End - need.Start}
		servers = append(servers, s)
		picked = append(picked, c)
	}
	noChain := func(rerr error) error {
		spans := make([]swarm.Span, len(servers))
		for i, s := range servers {
			spans[i] = swarm.Span{Start: s.Span.Start + need.Start, End: s.Span.End + need.Start}
		}
		return &NoChainError{Need: need, Uncovered: swarm.Uncovered(spans, need), Routing: rerr, Unusable: left}
	}
	if len(servers) == 0 {
		return Plan{}, noChain(nil)
	}
	rreq := routing.Request{Blocks: need.Len(), MaxLength: req.MaxLength}
	r, err := routing.WSRR(servers, rreq)
	if err == nil && hybrid(r, picked) {
		r, err = pureRoute(servers, picked, rreq)
	}
	if err != nil {
		if errors.Is(err, routing.ErrNoRoute) {
			return Plan{}, noChain(err)
		}
		return Plan{}, fmt.Errorf("client: route blocks %s: %w", need, err)
	}
	p := Plan{Hops: make([]Hop, len(r.Hops)), Cost: r.Cost}
	for i, h := range r.Hops {
		p.Hops[i] = Hop{
			Candidate: picked[h.Server],
			Span:      swarm.Span{Start: h.Span.Start + need.Start, End: h.Span.End + need.Start},
		}
	}
	return p, nil
}

// hybrid reports whether a route uses a replica together with other hops.
func hybrid(r routing.Route, picked []Candidate) bool {
	if len(r.Hops) < 2 {
		return false
	}
	for _, h := range r.Hops {
		if picked[h.Server].Info.FullRange {
			return true
		}
	}
	return false
}

// pureRoute routes over the block servers alone and over the replicas alone
// and returns the cheaper route, with hop indices into servers.
func pureRoute(servers []routing.Server, picked []Candidate, req routing.Request) (routing.Route, error) {
	var best routing.Route
	var errs []error
	found := false
	for _, replicas := range []bool{false, true} {
		var sub []routing.Server
		var index []int
		for i, c := range picked {
			if c.Info.FullRange == replicas {
				sub = append(sub, servers[i])
				index = append(index, i)
			}
		}
		if len(sub) == 0 {
			continue
		}
		r, err := routing.WSRR(sub, req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for j := range r.Hops {
			r.Hops[j].Server = index[r.Hops[j].Server]
		}
		if !found || r.Cost < best.Cost {
			best, found = r, true
		}
	}
	if !found {
		return routing.Route{}, errors.Join(errs...)
	}
	return best, nil
}
