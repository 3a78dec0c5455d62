package client

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// plannedHop is one server of a chosen chain and the blocks it processes.
type plannedHop struct {
	cand Candidate
	span swarm.Span
}

// NoChainError says why no chain covers the blocks a session needs.
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
		parts := make([]string, len(e.Uncovered))
		for i, s := range e.Uncovered {
			parts[i] = s.String()
		}
		fmt.Fprintf(&b, ": no usable server hosts blocks %s", strings.Join(parts, ", "))
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

// route chooses the chain of servers covering the blocks need with WS-RR
// (routing.WSRR, paper 003 Alg. 2 lines 10-13): on the feasible graph of
// Lemma 3.1 restricted to need (each candidate's span clipped to need,
// blocks renumbered from need.Start), every edge into server j costs
// t^W_ij + l_max (t_cj + tau_j k_j) with the server's advertised tau, span,
// cache room and session loads (eq. 20) and the measured RTT. A server
// whose span extends past need processes only its part of need.
//
// all is every candidate (for the error); excluded are endpoints this
// session must not use again.
func route(model swarm.ModelInfo, all []Candidate, excluded map[string]error, need swarm.Span, maxLength int) ([]plannedHop, error) {
	cands := usable(all, excluded)
	var servers []routing.Server
	var picked []Candidate
	var short []string
	for _, c := range cands {
		clip := c.Info.Span.Intersect(need)
		if clip.Empty() {
			continue
		}
		if c.Info.MaxLength > 0 && maxLength > c.Info.MaxLength {
			short = append(short, fmt.Sprintf("%s: sessions of at most %d tokens, this one needs %d", c.Endpoint.Inference, c.Info.MaxLength, maxLength))
			continue
		}
		s := routing.FromServerInfo(c.Info.ServerInfo, model, maxLength, 1, c.RTT.Seconds(), c.RTT.Seconds(), 0)
		s.Name = c.Endpoint.Inference
		s.Span = swarm.Span{Start: clip.Start - need.Start, End: clip.End - need.Start}
		servers = append(servers, s)
		picked = append(picked, c)
	}
	noChain := func(rerr error) error {
		e := &NoChainError{Need: need, Uncovered: uncovered(need, servers), Routing: rerr, Unusable: short}
		for _, c := range all {
			switch {
			case excluded[c.Endpoint.Inference] != nil:
				e.Unusable = append(e.Unusable, fmt.Sprintf("%s: failed earlier: %v", c.Endpoint.Inference, excluded[c.Endpoint.Inference]))
			case c.Err != nil:
				e.Unusable = append(e.Unusable, fmt.Sprintf("%s: %v", c.Endpoint.Inference, c.Err))
			}
		}
		return e
	}
	if len(servers) == 0 {
		return nil, noChain(nil)
	}
	r, err := routing.WSRR(servers, routing.Request{Blocks: need.Len(), MaxLength: max(maxLength, 1)})
	if err != nil {
		if errors.Is(err, routing.ErrNoRoute) {
			return nil, noChain(err)
		}
		return nil, fmt.Errorf("client: route blocks %s: %w", need, err)
	}
	hops := make([]plannedHop, len(r.Hops))
	for i, h := range r.Hops {
		hops[i] = plannedHop{
			cand: picked[h.Server],
			span: swarm.Span{Start: h.Span.Start + need.Start, End: h.Span.End + need.Start},
		}
	}
	return hops, nil
}

// uncovered returns the blocks of [0, need.Len()) (renumbered back to need)
// that none of the servers' (renumbered) spans hosts.
func uncovered(need swarm.Span, servers []routing.Server) []swarm.Span {
	spans := make([]swarm.Span, len(servers))
	for i, s := range servers {
		spans[i] = s.Span
	}
	slices.SortFunc(spans, func(a, b swarm.Span) int { return cmp.Compare(a.Start, b.Start) })
	var gaps []swarm.Span
	next := 0
	for _, s := range spans {
		if s.Start > next {
			gaps = append(gaps, swarm.Span{Start: next + need.Start, End: s.Start + need.Start})
		}
		next = max(next, s.End)
	}
	if next < need.Len() {
		gaps = append(gaps, swarm.Span{Start: next + need.Start, End: need.End})
	}
	return gaps
}
