package routing

import (
	"math"
	"slices"
)

// OptimizedRR routes one session by the exact individually optimal
// schedule (21) of paper 003 ("Optimized RR" in Sec. 4.3, which the authors
// solve with Gurobi): minimize
//
//	max_{(i,j) in p} t^W_ij(t) + l_max sum_{(i,j) in p} t^c_ij
//
// over feasible chains p. Instead of a MILP it enumerates the distinct
// finite edge waits w in increasing order, finds the shortest chain by
// l_max t^c_ij among the edges with t^W_ij <= w, and keeps the best
// objective: exact, and O(#waits x #edges). WS-RR relaxes the max to a sum
// (Sec. 3.3.2), so OptimizedRR's objective is never above WS-RR's route
// evaluated the same way. Route.Cost is (21a). Errors wrap ErrBadInput or
// ErrNoRoute.
func OptimizedRR(servers []Server, req Request) (Route, error) {
	g, waiters, err := prepare(servers, req)
	if err != nil {
		return Route{}, err
	}
	var waits []float64
	for i := range g.Out {
		for _, e := range g.Out[i] {
			if e.To == g.Sink() {
				continue
			}
			if w := waiters[e.To].wait(e.Blocks.Len()); !math.IsInf(w, 1) {
				waits = append(waits, w)
			}
		}
	}
	slices.Sort(waits)
	waits = slices.Compact(waits)
	l := float64(req.MaxLength)
	var best Route
	found := false
	for _, limit := range waits {
		path, _, ok := g.shortest(func(e Edge) float64 {
			if e.To == g.Sink() {
				return 0
			}
			k := e.Blocks.Len()
			if waiters[e.To].wait(k) > limit {
				return math.Inf(1)
			}
			return l * LinkCost(servers[e.To], k, req)
		})
		if !ok {
			continue
		}
		r := buildRoute(servers, req, waiters, path)
		r.Cost = r.Wait + l*r.PerToken
		if !found || r.Cost < best.Cost {
			best, found = r, true
		}
	}
	if !found {
		return Route{}, g.noRoute()
	}
	return best, nil
}
