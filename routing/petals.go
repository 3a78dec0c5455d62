package routing

import (
	"fmt"
	"math"
)

// PetalsParams are the constants of the PETALS routing heuristic.
type PetalsParams struct {
	// Overhead is the per-hop serialization overhead PETALS adds to every
	// edge, in seconds (the paper's simulator uses 0.018).
	Overhead float64
	// AllocPenalty is added to the edge into a server that lacks free
	// attention-cache memory for the session, in seconds (the paper's
	// simulator uses 10).
	AllocPenalty float64
	// Ping optionally gives server-to-server round trip times in seconds,
	// Ping[i][j] for the edge from server i to server j (n x n). Nil uses
	// each server's RTT from the client for every edge into it.
	Ping [][]float64
}

// DefaultPetalsParams returns the constants of the paper's simulator
// (Petals_online.m: overhead_delay_petals = 18 ms, alloc_delay = 10 s).
func DefaultPetalsParams() PetalsParams {
	return PetalsParams{Overhead: 0.018, AllocPenalty: 10}
}

// Petals routes one session with the PETALS heuristic, the baseline of
// paper 003 Sec. 4.1 (petals.client.routing.sequence_manager as replicated
// in the authors' Petals_online.m): Dijkstra on the Lemma 3.1 graph with
// edge weights
//
//	ping/2 + Overhead + tau_j k   (+ AllocPenalty when server j lacks cache)
//
// into server j processing k blocks, and ping/2 from the last server back
// to the client; there is no waiting model. A server "lacks cache" when
// its free cache slots now (CacheSlots minus the caches of sessions not yet
// finished) are fewer than k; the authors' simulator approximates this by
// counting sessions against a session capacity. Route.Cost is the heuristic
// path weight; hops carry the model's t^c_ij (4)/(8) and t^W_ij (20).
// Errors wrap ErrBadInput or ErrNoRoute.
func Petals(servers []Server, req Request, p PetalsParams) (Route, error) {
	g, waiters, err := prepare(servers, req)
	if err != nil {
		return Route{}, err
	}
	if err := p.validate(len(servers)); err != nil {
		return Route{}, err
	}
	path, cost, ok := g.shortest(func(e Edge) float64 {
		if e.To == g.Sink() {
			return servers[e.From].RTT / 2
		}
		ping := servers[e.To].RTT
		if p.Ping != nil && e.From != g.Source() {
			ping = p.Ping[e.From][e.To]
		}
		k := e.Blocks.Len()
		w := ping/2 + p.Overhead + servers[e.To].Tau*float64(k)
		if waiters[e.To].free() < k {
			w += p.AllocPenalty
		}
		return w
	})
	if !ok {
		return Route{}, g.noRoute()
	}
	r := buildRoute(servers, req, waiters, path)
	r.Cost = cost
	return r, nil
}

func (p PetalsParams) validate(n int) error {
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	if !ok(p.Overhead) || !ok(p.AllocPenalty) {
		return fmt.Errorf("%w: petals overhead %g and alloc penalty %g, want finite seconds >= 0", ErrBadInput, p.Overhead, p.AllocPenalty)
	}
	if p.Ping == nil {
		return nil
	}
	if len(p.Ping) != n {
		return fmt.Errorf("%w: petals ping matrix has %d rows, want one per server (%d)", ErrBadInput, len(p.Ping), n)
	}
	for i, row := range p.Ping {
		if len(row) != n {
			return fmt.Errorf("%w: petals ping[%d] has %d entries, want %d", ErrBadInput, i, len(row), n)
		}
		for j, v := range row {
			if !ok(v) {
				return fmt.Errorf("%w: petals ping[%d][%d] = %g, want finite seconds >= 0", ErrBadInput, i, j, v)
			}
		}
	}
	return nil
}
