package routing

import (
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// WSRR routes one new session by Waiting-penalized Shortest-path Request
// Routing (paper 003, Alg. 2 lines 10-13): on the feasible routing graph of
// Lemma 3.1 every edge (i, j) costs
//
//	t^W_ij(t) + l_max t^c_ij
//
// with t^W from eq. (20) (WaitTime) and t^c from eq. (4) or (8) (LinkCost),
// and the route is a least-cost S-client to D-client path. Edges whose
// waiting time is infinite are unusable. Ties go to the path found first
// (servers scanned in increasing span end, then index). While at most R
// sessions run the waits are 0 and the route is optimal for the placement
// (Corollary 3.7).
//
// servers is the snapshot (each hop's Server field indexes it); errors wrap
// ErrBadInput or ErrNoRoute (*NoRouteError).
func WSRR(servers []Server, req Request) (Route, error) {
	g, waiters, err := prepare(servers, req)
	if err != nil {
		return Route{}, err
	}
	l := float64(req.MaxLength)
	path, cost, ok := g.shortest(func(e Edge) float64 {
		if e.To == g.Sink() {
			return 0
		}
		k := e.Blocks.Len()
		return waiters[e.To].wait(k) + l*LinkCost(servers[e.To], k, req)
	})
	if !ok {
		return Route{}, g.noRoute()
	}
	r := buildRoute(servers, req, waiters, path)
	r.Cost = cost
	return r, nil
}

// prepare validates the inputs and builds the graph and the waiters.
func prepare(servers []Server, req Request) (*Graph, []waiter, error) {
	if err := validate(servers, req); err != nil {
		return nil, nil, err
	}
	spans := make([]swarm.Span, len(servers))
	waiters := make([]waiter, len(servers))
	for j, s := range servers {
		spans[j] = s.Span
		waiters[j] = newWaiter(s, req.Now)
	}
	g, err := NewGraph(spans, req.Blocks)
	return g, waiters, err
}

// noRoute explains why no path exists.
func (g *Graph) noRoute() error {
	r := g.reach()
	return &NoRouteError{Reach: r, Blocks: g.Blocks, Waiting: r == g.Blocks}
}

// buildRoute turns a Source-to-Sink edge path into a Route (without Cost).
func buildRoute(servers []Server, req Request, waiters []waiter, path []Edge) Route {
	var r Route
	for _, e := range path {
		if e.To >= len(servers) {
			continue // the edge into the D-client
		}
		s := servers[e.To]
		h := Hop{
			Server:   e.To,
			Name:     s.Name,
			Span:     e.Blocks,
			PerToken: LinkCost(s, e.Blocks.Len(), req),
			Wait:     waiters[e.To].wait(e.Blocks.Len()),
		}
		r.Hops = append(r.Hops, h)
		r.PerToken += h.PerToken
		r.Wait = max(r.Wait, h.Wait)
	}
	return r
}

// shortest returns a least-weight path from Source to Sink, by dynamic
// programming over the DAG in topological order (equivalent to Dijkstra for
// non-negative weights). Edges of weight +Inf are unusable. ok is false
// when the Sink is unreachable.
func (g *Graph) shortest(weight func(Edge) float64) (path []Edge, cost float64, ok bool) {
	n := len(g.Spans)
	dist := make([]float64, n+2)
	pred := make([]Edge, n+2)
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	dist[g.Source()] = 0
	relax := func(i int) {
		if math.IsInf(dist[i], 1) {
			return
		}
		for _, e := range g.Out[i] {
			w := weight(e)
			if math.IsInf(w, 1) {
				continue
			}
			if d := dist[i] + w; d < dist[e.To] {
				dist[e.To] = d
				pred[e.To] = e
			}
		}
	}
	relax(g.Source())
	for _, i := range g.topo {
		relax(i)
	}
	if math.IsInf(dist[g.Sink()], 1) {
		return nil, 0, false
	}
	for v := g.Sink(); v != g.Source(); v = pred[v].From {
		path = append(path, pred[v])
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, dist[g.Sink()], true
}
