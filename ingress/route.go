package ingress

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// Plan is the routing decision for one request: a replica, or a chain of
// block servers.
type Plan struct {
	// Replica is the chosen full-range replica; nil for a block chain.
	Replica *Candidate
	// Blocks are the allowed, usable block servers: the chain's candidates.
	// The client routes among them itself (the same WS-RR on the same
	// advertised state) and fails over to them.
	Blocks []Candidate
	// Route is WS-RR's route over the allowed candidates: one [0, L) hop
	// for a replica, the chain otherwise.
	Route routing.Route
}

// Kind is "replica" or "chain", the route label of metrics and headers.
func (p Plan) Kind() string {
	if p.Replica != nil {
		return "replica"
	}
	return "chain"
}

// String names the route's hops, for logs and the X-Swarm-Route header.
func (p Plan) String() string {
	parts := make([]string, len(p.Route.Hops))
	for i, h := range p.Route.Hops {
		parts[i] = h.Name + " " + h.Span.String()
	}
	return p.Kind() + ": " + strings.Join(parts, " -> ")
}

// Allowed reports whether a provider is on a trusted-provider allowlist;
// a nil allowlist allows every provider (paper 000 Sec. 3.3 "Client-side
// filtering").
func Allowed(provider string, allow []string) bool {
	return allow == nil || slices.Contains(allow, provider)
}

// Choose prunes the candidates by the allowlist (nil = all), usability and
// the excluded endpoints, then routes a session of maxLength tokens over
// ONE routing graph with WS-RR (routing.WSRR, paper 003 Alg. 2 lines
// 10-13): block servers are their spans with their advertised tau_j, cache
// room and session loads (eq. 20) and measured RTT t_cj; a replica is a
// [0, L) hop with the per-block time tau_j it advertises (its engine's
// per-token time / L), unlimited cache (it admits requests itself), and its
// RTT amortized over the session (RTT / maxLength), since text goes to it
// once and tokens stream back, instead of a round trip per token.
//
// A replica takes text, not hidden states, so a route that enters a
// replica after block servers cannot run; when WS-RR returns such a hybrid
// route, the best pure chain and the best replica are routed separately and
// the cheaper (by WS-RR cost) wins.
//
// Errors wrap ErrNoRoute naming the uncovered blocks and why candidates were
// left out.
func Choose(model swarm.ModelInfo, cands []Candidate, allow []string, exclude map[string]bool, maxLength int) (Plan, error) {
	maxLength = max(maxLength, 1)
	var servers []routing.Server
	var picked []Candidate
	var left []string
	for _, c := range cands {
		switch {
		case exclude[c.Endpoint]:
			left = append(left, c.Endpoint+": failed earlier in this request")
			continue
		case c.Err != nil:
			left = append(left, fmt.Sprintf("%s: %v", c.Endpoint, c.Err))
			continue
		case !c.Usable():
			left = append(left, fmt.Sprintf("%s: %s", c.Endpoint, c.State))
			continue
		case !Allowed(c.Info.Provider, allow):
			left = append(left, fmt.Sprintf("%s: provider %q is not in the allowlist %q", c.Endpoint, c.Info.Provider, allow))
			continue
		case c.MaxLength > 0 && maxLength > c.MaxLength:
			left = append(left, fmt.Sprintf("%s: sessions of at most %d tokens, this one needs %d", c.Endpoint, c.MaxLength, maxLength))
			continue
		}
		var s routing.Server
		if c.Info.FullRange {
			s = routing.FromServerInfo(c.Info, model, maxLength, 1, c.RTT.Seconds()/float64(maxLength), c.RTT.Seconds(), 0)
			s.Span = model.Blocks()
		} else {
			s = routing.FromServerInfo(c.Info, model, maxLength, 1, c.RTT.Seconds(), c.RTT.Seconds(), 0)
		}
		s.Name = c.Endpoint
		servers = append(servers, s)
		picked = append(picked, c)
	}
	noRoute := func(err error) error {
		msg := fmt.Sprintf("%v for model %s", ErrNoRoute, model.Name)
		if gaps := uncovered(model.NBlocks, servers); len(gaps) > 0 {
			msg += ": no allowed server hosts blocks " + strings.Join(gaps, ", ")
		} else if err != nil {
			msg += ": " + err.Error()
		}
		if len(left) > 0 {
			msg += " (left out: " + strings.Join(left, "; ") + ")"
		}
		return &noRouteError{msg: msg, err: err}
	}
	if len(servers) == 0 {
		return Plan{}, noRoute(nil)
	}
	req := routing.Request{Blocks: model.NBlocks, MaxLength: maxLength}
	r, err := routing.WSRR(servers, req)
	if err != nil {
		return Plan{}, noRoute(err)
	}
	if hybrid(r, picked) {
		r, err = pureRoute(servers, picked, req)
		if err != nil {
			return Plan{}, noRoute(err)
		}
	}
	p := Plan{Route: r}
	if len(r.Hops) == 1 && picked[r.Hops[0].Server].Info.FullRange {
		rep := picked[r.Hops[0].Server]
		p.Replica = &rep
		return p, nil
	}
	for _, c := range picked {
		if !c.Info.FullRange {
			p.Blocks = append(p.Blocks, c)
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

// uncovered returns the blocks of [0, n) no server hosts, as "START:END".
func uncovered(n int, servers []routing.Server) []string {
	covered := make([]bool, n)
	for _, s := range servers {
		for b := max(s.Span.Start, 0); b < min(s.Span.End, n); b++ {
			covered[b] = true
		}
	}
	var gaps []string
	for b := 0; b < n; {
		if covered[b] {
			b++
			continue
		}
		e := b
		for e < n && !covered[e] {
			e++
		}
		gaps = append(gaps, swarm.Span{Start: b, End: e}.String())
		b = e
	}
	return gaps
}

// noRouteError is an ErrNoRoute with the routing error (if any) inside.
type noRouteError struct {
	msg string
	err error
}

func (e *noRouteError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrNoRoute) true and exposes routing's error.
func (e *noRouteError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrNoRoute, e.err}
	}
	return []error{ErrNoRoute}
}
