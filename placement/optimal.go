package placement

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// OptimalMaxPlacements is the most placements Optimal enumerates (after
// merging identical servers) before giving up with ErrTooLarge.
const OptimalMaxPlacements = 2_000_000

// Optimal solves BPRR (6) of paper 003 exactly by exhaustive search, for
// tiny fleets only (BPRR is NP-hard, Theorem 3.2): it enumerates every
// placement (each server hosts one span or nothing; identical servers are
// enumerated as multisets) and, for each, the optimal routing (16) of
// |R_c| sessions per client (in.Demand, nil: R split evenly) under the
// memory constraint (6b), by branch and bound. The objective is (6a), the
// total per-token time of eq. (4). Letting a server host nothing relaxes
// (6e) (a_j, m_j in [L]); it never makes the optimum worse.
//
// Errors wrap ErrBadInput, ErrTooLarge, or ErrInfeasible when no placement
// serves all sessions.
func Optimal(in Input) (Plan, error) {
	p, _, err := OptimalPerToken(in)
	return p, err
}

// OptimalPerToken is Optimal that also returns the optimal average per-token
// time over the R sessions, (6a)/R, in seconds.
func OptimalPerToken(in Input) (Plan, float64, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, 0, err
	}
	opts := spanOptions(in)
	groups := identicalGroups(in)
	count := 1.0
	for _, g := range groups {
		count *= multisets(len(opts[g[0]]), len(g))
	}
	if count > OptimalMaxPlacements {
		return Plan{}, 0, fmt.Errorf("%w: %.3g placements of %d servers over %d blocks (limit %d)",
			ErrTooLarge, count, len(in.Servers), in.Model.Blocks, OptimalMaxPlacements)
	}
	s := &optSearch{in: in, opts: opts, demand: in.demand(), best: math.Inf(1),
		spans: make([]swarm.Span, len(in.Servers))}
	s.prev = make([]int, len(in.Servers))
	for _, g := range groups {
		for i := 1; i < len(g); i++ {
			s.prev[g[i]] = g[i-1] + 1 // 1-based index of the previous identical server
		}
	}
	s.choose(0, make([]int, len(in.Servers)))
	if s.bestSpans == nil {
		return Plan{}, 0, fmt.Errorf("%w: no placement of the %d servers serves R = %d sessions", ErrInfeasible, len(in.Servers), in.Sessions)
	}
	blocks := make([]int, len(in.Servers))
	for j, sp := range s.bestSpans {
		blocks[j] = sp.Len()
	}
	plan := newPlan(in, "optimal", blocks)
	plan.Spans = s.bestSpans
	plan.Order = amortizedOrder(plan.Amortized, blocks)
	return plan, s.best / float64(in.Sessions), nil
}

// RoutedPerToken returns the optimal average per-token time, in seconds, of
// routing R sessions (|R_c| per client from in.Demand) under the given
// placement: problem (16) of paper 003 with the memory constraint (16b),
// solved exactly by branch and bound (small instances only). Under a CG-BP
// placement it equals the shortest-path routing (Lemma 3.4). Errors wrap
// ErrBadInput, or ErrInfeasible when the sessions cannot all be routed.
func RoutedPerToken(in Input, spans []swarm.Span) (float64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	if len(spans) != len(in.Servers) {
		return 0, fmt.Errorf("%w: %d spans, want one per server (%d)", ErrBadInput, len(spans), len(in.Servers))
	}
	for j, sp := range spans {
		if sp == (swarm.Span{}) {
			continue
		}
		if err := sp.Validate(in.Model.Blocks); err != nil {
			return 0, fmt.Errorf("%w: spans[%d]: %w", ErrBadInput, j, err)
		}
	}
	s := &optSearch{in: in, demand: in.demand(), best: math.Inf(1)}
	cost, ok := s.route(spans, math.Inf(1))
	if !ok {
		return 0, fmt.Errorf("%w: the placement cannot route R = %d sessions within memory (16b)", ErrInfeasible, in.Sessions)
	}
	return cost / float64(in.Sessions), nil
}

// spanOptions lists, per server, the spans it may host: nothing, or any
// window whose weights fit in memory.
func spanOptions(in Input) [][]swarm.Span {
	opts := make([][]swarm.Span, len(in.Servers))
	for j, s := range in.Servers {
		maxM := in.capBlocks(j, s.MemoryBytes/in.Model.BlockBytes)
		o := []swarm.Span{{}}
		for m := 1; m <= maxM; m++ {
			for a := 0; a+m <= in.Model.Blocks; a++ {
				o = append(o, swarm.Span{Start: a, End: a + m})
			}
		}
		opts[j] = o
	}
	return opts
}

// identicalGroups partitions the servers into groups of identical
// parameters (name aside); a placement only needs one multiset per group.
func identicalGroups(in Input) [][]int {
	var groups [][]int
	for j, s := range in.Servers {
		found := false
		for g, members := range groups {
			if sameServer(in.Servers[members[0]], s) {
				groups[g] = append(groups[g], j)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, []int{j})
		}
	}
	return groups
}

func sameServer(a, b Server) bool {
	return a.MemoryBytes == b.MemoryBytes && a.Tau == b.Tau && a.MaxBlocks == b.MaxBlocks &&
		slices.Equal(a.RTT, b.RTT)
}

// multisets is C(n+k-1, k), the number of multisets of size k from n items.
func multisets(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n+i-1) / float64(i)
	}
	return r
}

type optSearch struct {
	in        Input
	opts      [][]swarm.Span
	prev      []int // 1-based index of the previous identical server, 0 if none
	demand    []int
	spans     []swarm.Span
	best      float64
	bestSpans []swarm.Span
}

// choose enumerates placements server by server; idx[j] is the option
// index of server j (non-decreasing within a group of identical servers).
func (s *optSearch) choose(j int, idx []int) {
	if j == len(s.in.Servers) {
		if !covers(s.spans, s.in.Model.Blocks) {
			return
		}
		if cost, ok := s.route(s.spans, s.best); ok && cost < s.best {
			s.best = cost
			s.bestSpans = slices.Clone(s.spans)
		}
		return
	}
	from := 0
	if p := s.prev[j]; p > 0 {
		from = idx[p-1]
	}
	for o := from; o < len(s.opts[j]); o++ {
		idx[j] = o
		s.spans[j] = s.opts[j][o]
		s.choose(j+1, idx)
	}
}

func covers(spans []swarm.Span, l int) bool {
	reach := 0 // blocks [0, reach) are covered by a chain
	for changed := true; changed && reach < l; {
		changed = false
		for _, sp := range spans {
			if !sp.Empty() && sp.Start <= reach && sp.End > reach {
				reach, changed = sp.End, true
			}
		}
	}
	return reach >= l
}

// path is a feasible chain (Lemma 3.1) for one client with its per-token
// time (sum of eq. 4) and the blocks k_j each server processes.
type path struct {
	cost  float64
	hops  []int // server indices
	loads []int // blocks processed per hop
}

// paths enumerates the feasible chains of client c under spans.
func (s *optSearch) paths(spans []swarm.Span, c int) []path {
	var out []path
	var hops, loads []int
	var walk func(end int, cost float64)
	walk = func(end int, cost float64) {
		if end == s.in.Model.Blocks {
			out = append(out, path{cost, slices.Clone(hops), slices.Clone(loads)})
			return
		}
		for j, sp := range spans {
			if sp.Empty() || sp.Start > end || sp.End <= end { // Lemma 3.1: a_j <= a_i+m_i <= a_j+m_j-1
				continue
			}
			k := sp.End - end
			srv := s.in.Servers[j]
			hops, loads = append(hops, j), append(loads, k)
			walk(sp.End, cost+srv.RTT[c]+srv.Tau*float64(k))
			hops, loads = hops[:len(hops)-1], loads[:len(loads)-1]
		}
	}
	walk(0, 0)
	slices.SortStableFunc(out, func(a, b path) int { return cmp.Compare(a.cost, b.cost) })
	return out
}

// route solves (16) exactly under spans: the least total per-token time of
// routing demand[c] sessions per client, each session on one feasible
// chain, within every server's cache slots. It gives up (ok = false) on
// totals that cannot beat bound.
func (s *optSearch) route(spans []swarm.Span, bound float64) (float64, bool) {
	slots := make([]int, len(spans))
	for j, sp := range spans {
		free := s.in.Servers[j].MemoryBytes - s.in.Model.BlockBytes*int64(sp.Len())
		if free < 0 {
			return 0, false
		}
		slots[j] = int(free / s.in.Model.CacheBytes)
		if s.in.Model.BlockCacheBytes != nil && !sp.Empty() {
			slots[j] = slotsFor(free, sp.Len(), s.in.Model.SpanCacheBytes(sp))
		}
	}
	all := make([][]path, len(s.demand))
	lower := 0.0 // sum of every session's cheapest chain, ignoring memory
	for c, d := range s.demand {
		if d == 0 {
			continue
		}
		all[c] = s.paths(spans, c)
		if len(all[c]) == 0 {
			return 0, false
		}
		lower += float64(d) * all[c][0].cost
	}
	if lower >= bound {
		return 0, false
	}
	best, found := bound, false
	var assign func(c, from, left int, cost, rest float64)
	// rest is the cheapest-chain cost of the sessions not yet assigned.
	assign = func(c, from, left int, cost, rest float64) {
		if cost+rest >= best {
			return
		}
		for left == 0 {
			c++
			if c == len(s.demand) {
				best, found = cost, true
				return
			}
			from, left = 0, s.demand[c]
		}
		ps := all[c]
		for i := from; i < len(ps); i++ {
			p := ps[i]
			if cost+p.cost+rest-ps[0].cost >= best {
				return // paths are sorted by cost
			}
			ok := true
			for h, j := range p.hops {
				if slots[j] < p.loads[h] {
					ok = false
				}
			}
			if !ok {
				continue
			}
			for h, j := range p.hops {
				slots[j] -= p.loads[h]
			}
			assign(c, i, left-1, cost+p.cost, rest-ps[0].cost)
			for h, j := range p.hops {
				slots[j] += p.loads[h]
			}
		}
	}
	assign(-1, 0, 0, 0, lower)
	return best, found
}
