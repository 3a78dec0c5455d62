package placement

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// Limits of Refined's search. They bound its work on large fleets; tiny
// fleets finish long before them.
const (
	// refinedExactServers, refinedExactBlocks and refinedExactSessions:
	// at or below all three, Refined scores placements with the exact
	// routing (16) (branch and bound, as Optimal); above, with the greedy
	// routing (an upper bound on (16) that equals it under CG-BP, Lemma 3.4).
	refinedExactServers  = 6
	refinedExactBlocks   = 6
	refinedExactSessions = 8
	// refinedMaxEvals is the most placements one Refined call scores.
	refinedMaxEvals = 20000
	// refinedClimbStarts is how many of the best starts the local search
	// begins from (all of them on fleets scored exactly).
	refinedClimbStarts = 3
	// refinedAllSpans: a server with at most this many span options (every
	// window that fits, and nothing) tries all of them in one move;
	// otherwise only edits of its span by one block and moves by its length.
	refinedAllSpans = 64
	// refinedPairMoves: on fleets scored exactly, once single moves are
	// exhausted, two servers change spans at once when the product of
	// their move counts is at most this.
	refinedPairMoves = 1024
	// refinedKicks is the most perturbations of the iterated local search.
	refinedKicks = 100
	// refinedSwapServers: pairs of servers swap spans when the fleet has at
	// most this many servers.
	refinedSwapServers = 12
)

// Refined improves CG-BP (paper 003, Alg. 1) without LP or MILP: it scores
// placements by the objective CG-BP approximates, the average per-token
// time (6a)/R of R = in.Sessions sessions routed optimally under the
// memory constraint (16b), and
//
//  1. starts from CG-BP for R, then from CG-BP run with every other R' in
//     [1, max(2R, R+8)] that satisfies (18) (a smaller R' gives fewer, longer
//     spans and fewer hops; a larger one more capacity), and from PETALS'
//     placement;
//  2. from the best starts, climbs by local search: a server's span is
//     shifted, extended or shrunk by one block at either end, moved by its
//     length, emptied, or (when it has few options) replaced by any window
//     that fits; two servers swap spans (small fleets). Only strict
//     improvements are kept.
//
// A placement's score is, in order: the sessions it cannot route, the
// blocks nobody hosts, then (6a)/R. On tiny fleets (at most 6 servers,
// 6 blocks, 8 sessions) (6a)/R comes from the exact routing (16) (as
// RoutedPerToken); otherwise from a greedy routing that gives each session,
// cheapest first, its shortest chain with cache room left. The greedy
// routing never beats (16), and equals it under a CG-BP placement for R
// (Lemma 3.4: every session fits on its shortest chain), so the plan
// returned is never worse than CG-BP's by (16), and is CG-BP's own plan
// whenever nothing strictly better is found, in particular where CG-BP is
// optimal. When CG-BP is infeasible, Refined searches for a placement that
// routes every session. The search scores at most refinedMaxEvals
// placements.
//
// Plan.Sessions is R; Capacity, CacheSlots and Amortized follow the spans
// (eqs. 15, 20, 14). Errors wrap ErrBadInput, or ErrInfeasible (with the
// best plan found) when no placement found routes all R sessions.
func Refined(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	r := newRefiner(in)
	cg, _ := CGBP(in)
	best := r.evaluate(cg.Spans)
	bestSpans := slices.Clone(cg.Spans)

	type start struct {
		spans []swarm.Span
		score refinedScore
	}
	starts := []start{{slices.Clone(cg.Spans), best}}
	seen := map[string]bool{spanKey(cg.Spans): true}
	add := func(spans []swarm.Span) {
		if k := spanKey(spans); !seen[k] {
			seen[k] = true
			starts = append(starts, start{slices.Clone(spans), r.evaluate(spans)})
		}
	}
	rmax := min(LargestFeasibleSessions(in), max(2*in.Sessions, in.Sessions+8))
	for rr := 1; rr <= rmax; rr++ {
		if rr == in.Sessions {
			continue
		}
		alt := in
		alt.Sessions = rr
		blocks := make([]int, len(in.Servers))
		for j := range in.Servers {
			blocks[j] = ConservativeBlocks(alt, j)
		}
		p, _ := greedy(alt, "cgbp", blocks)
		add(p.Spans)
	}
	if p, err := Petals(in); err == nil || p.Spans != nil {
		add(p.Spans)
	}
	slices.SortStableFunc(starts, func(a, b start) int { return a.score.compare(b.score) })
	climbs := refinedClimbStarts
	if r.exact {
		climbs = len(starts)
	}
	for i, s := range starts {
		if i >= climbs || r.evals >= refinedMaxEvals {
			break
		}
		spans, score := r.climb(s.spans, s.score)
		if score.compare(best) < 0 {
			best, bestSpans = score, spans
		}
	}

	// iterated local search: kick the best plan (2-3 servers to random
	// moves), climb, keep strict improvements. The generator has a fixed
	// seed, so Refined is a function of its input.
	rng := rand.New(rand.NewPCG(3, 5))
	for kick := 0; kick < refinedKicks && r.evals < refinedMaxEvals; kick++ {
		spans := slices.Clone(bestSpans)
		for range 2 + rng.IntN(2) {
			j := rng.IntN(len(spans))
			ms := r.moves(j, spans[j])
			spans[j] = ms[rng.IntN(len(ms))]
		}
		spans, score := r.climb(spans, r.evaluate(spans))
		if score.compare(best) < 0 {
			best, bestSpans = score, spans
		}
	}

	blocks := make([]int, len(in.Servers))
	for j, sp := range bestSpans {
		blocks[j] = sp.Len()
	}
	plan := newPlan(in, "refined", blocks)
	plan.Spans = bestSpans
	plan.Order = amortizedOrder(plan.Amortized, blocks)
	if best.unserved > 0 {
		return plan, fmt.Errorf("%w: refined: the best placement found routes %d of R = %d sessions (%d blocks unhosted)",
			ErrInfeasible, in.Sessions-best.unserved, in.Sessions, best.uncovered)
	}
	return plan, nil
}

// refinedScore orders placements: fewer unroutable sessions, then fewer
// unhosted blocks, then a smaller average per-token time (seconds).
type refinedScore struct {
	unserved, uncovered int
	perToken            float64
}

// compare returns -1 when a is strictly better than b, +1 when strictly
// worse, 0 otherwise. Per-token times closer than 1e-12 relative count as
// equal, so rounding never replaces a plan by an equally good one.
func (a refinedScore) compare(b refinedScore) int {
	if c := cmp.Compare(a.unserved, b.unserved); c != 0 {
		return c
	}
	if c := cmp.Compare(a.uncovered, b.uncovered); c != 0 {
		return c
	}
	if math.Abs(a.perToken-b.perToken) <= 1e-12*max(math.Abs(a.perToken), math.Abs(b.perToken)) {
		return 0
	}
	return cmp.Compare(a.perToken, b.perToken)
}

type refiner struct {
	in     Input
	demand []int
	exact  bool
	evals  int
	// maxSpan[j] is the most blocks server j may host with room for one
	// session's cache (blocksFor with r = 1).
	maxSpan []int
	// scratch for the greedy routing
	slots []int
	dist  []float64
	from  []int // server of the hop that reaches each block boundary
	enter []int // and the boundary that hop entered at
}

func newRefiner(in Input) *refiner {
	r := &refiner{in: in, demand: in.demand(),
		exact: len(in.Servers) <= refinedExactServers && in.Model.Blocks <= refinedExactBlocks && in.Sessions <= refinedExactSessions,
		slots: make([]int, len(in.Servers)), dist: make([]float64, in.Model.Blocks+1), from: make([]int, in.Model.Blocks+1),
		enter: make([]int, in.Model.Blocks+1)}
	r.maxSpan = make([]int, len(in.Servers))
	for j, s := range in.Servers {
		r.maxSpan[j] = in.capBlocks(j, blocksFor(s.MemoryBytes, in.Model, 1))
	}
	return r
}

// spanKey identifies a placement (for deduplicating starts).
func spanKey(spans []swarm.Span) string {
	b := make([]byte, 0, 4*len(spans))
	for _, s := range spans {
		b = fmt.Appendf(b, "%d:%d,", s.Start, s.End)
	}
	return string(b)
}

// evaluate scores a placement (see Refined).
func (r *refiner) evaluate(spans []swarm.Span) refinedScore {
	r.evals++
	in := r.in
	uncovered := 0
	covered := make([]bool, in.Model.Blocks)
	for _, sp := range spans {
		for b := sp.Start; b < sp.End; b++ {
			covered[b] = true
		}
	}
	for _, c := range covered {
		if !c {
			uncovered++
		}
	}
	if r.exact && uncovered == 0 {
		s := &optSearch{in: in, demand: r.demand}
		if cost, ok := s.route(spans, math.Inf(1)); ok {
			return refinedScore{perToken: cost / float64(in.Sessions)}
		}
	}
	unserved, cost := r.greedyRoute(spans)
	return refinedScore{unserved: unserved, uncovered: uncovered, perToken: cost / float64(in.Sessions)}
}

// setSlots fills r.slots with each server's block cache slots under spans,
// as the routing (16) counts them; -1 when the span's weights do not fit.
func (r *refiner) setSlots(spans []swarm.Span) {
	in := r.in
	for j, sp := range spans {
		free := in.Servers[j].MemoryBytes - in.Model.BlockBytes*int64(sp.Len())
		switch {
		case free < 0:
			r.slots[j] = -1
		case in.Model.BlockCacheBytes != nil && !sp.Empty():
			r.slots[j] = slotsFor(free, sp.Len(), in.Model.SpanCacheBytes(sp))
		default:
			r.slots[j] = int(free / in.Model.CacheBytes)
		}
	}
}

// chain is one client's shortest chain with room left: hop servers and
// the blocks each processes, and the per-token time (sum of eq. 4).
type chain struct {
	ok    bool
	cost  float64
	hops  []int
	loads []int
}

// shortest returns client c's cheapest chain (Lemma 3.1: a hop enters a
// span anywhere and leaves at its end) whose every hop j has at least k_j
// cache slots left, by dynamic programming over block boundaries.
func (r *refiner) shortest(spans []swarm.Span, c int) chain {
	l := r.in.Model.Blocks
	for b := range r.dist {
		r.dist[b], r.from[b] = math.Inf(1), -1
	}
	r.dist[0] = 0
	for e := 0; e < l; e++ {
		if math.IsInf(r.dist[e], 1) {
			continue
		}
		for j, sp := range spans {
			if sp.Empty() || sp.Start > e || sp.End <= e {
				continue
			}
			k := sp.End - e
			if r.slots[j] < k {
				continue
			}
			s := r.in.Servers[j]
			if v := r.dist[e] + s.RTT[c] + s.Tau*float64(k); v < r.dist[sp.End] {
				r.dist[sp.End], r.from[sp.End], r.enter[sp.End] = v, j, e
			}
		}
	}
	if math.IsInf(r.dist[l], 1) {
		return chain{}
	}
	ch := chain{ok: true, cost: r.dist[l]}
	for b := l; b > 0; b = r.enter[b] {
		ch.hops = append(ch.hops, r.from[b])
		ch.loads = append(ch.loads, b-r.enter[b])
	}
	return ch
}

// fits reports whether every hop of ch still has its cache slots.
func (r *refiner) fits(ch chain) bool {
	for h, j := range ch.hops {
		if r.slots[j] < ch.loads[h] {
			return false
		}
	}
	return true
}

// greedyRoute routes the sessions one at a time, always the one whose
// shortest chain with room left is cheapest, and returns how many could
// not be routed and the total per-token time of those routed.
func (r *refiner) greedyRoute(spans []swarm.Span) (unserved int, total float64) {
	r.setSlots(spans)
	left := slices.Clone(r.demand)
	best := make([]chain, len(left))
	for c, d := range left {
		if d > 0 {
			best[c] = r.shortest(spans, c)
		}
	}
	for {
		pick := -1
		for c, d := range left {
			if d == 0 {
				continue
			}
			if !best[c].ok {
				unserved += d
				left[c] = 0
				continue
			}
			if pick < 0 || best[c].cost < best[pick].cost {
				pick = c
			}
		}
		if pick < 0 {
			return unserved, total
		}
		ch := best[pick]
		for h, j := range ch.hops {
			r.slots[j] -= ch.loads[h]
		}
		total += ch.cost
		left[pick]--
		// slots only shrink: a chain that still fits is still the cheapest
		for c, d := range left {
			if d > 0 && best[c].ok && !r.fits(best[c]) {
				best[c] = r.shortest(spans, c)
			}
		}
	}
}

// moves returns the spans server j tries in place of its span cur.
func (r *refiner) moves(j int, cur swarm.Span) []swarm.Span {
	l, m := r.in.Model.Blocks, r.maxSpan[j]
	var out []swarm.Span
	if options := 1 + m*(2*l-m+1)/2; options <= refinedAllSpans {
		out = append(out, swarm.Span{})
		for n := 1; n <= m; n++ {
			for a := 0; a+n <= l; a++ {
				out = append(out, swarm.Span{Start: a, End: a + n})
			}
		}
		return out
	}
	ok := func(s swarm.Span) bool { return s.Start >= 0 && s.End <= l && s.Len() >= 1 && s.Len() <= m }
	if cur.Empty() {
		for a := 0; a+m <= l; a += max(m/2, 1) {
			out = append(out, swarm.Span{Start: a, End: a + m})
		}
		return append(out, swarm.Span{Start: l - m, End: l})
	}
	n := cur.Len()
	for _, s := range []swarm.Span{
		{Start: cur.Start - 1, End: cur.End - 1}, {Start: cur.Start + 1, End: cur.End + 1}, // shift
		{Start: cur.Start - 1, End: cur.End}, {Start: cur.Start, End: cur.End + 1}, // extend
		{Start: cur.Start + 1, End: cur.End}, {Start: cur.Start, End: cur.End - 1}, // shrink
		{Start: cur.Start - n, End: cur.End - n}, {Start: cur.Start + n, End: cur.End + n}, // jump
		{Start: cur.Start - 1, End: cur.End + 1},
	} {
		if ok(s) {
			out = append(out, s)
		}
	}
	return append(out, swarm.Span{})
}

// climb runs first-improvement local search from spans (score sc) until
// no move improves or the evaluation budget is spent.
func (r *refiner) climb(spans []swarm.Span, sc refinedScore) ([]swarm.Span, refinedScore) {
	spans = slices.Clone(spans)
	n := len(spans)
	for improved := true; improved && r.evals < refinedMaxEvals; {
		improved = false
		for j := range n {
			for _, s := range r.moves(j, spans[j]) {
				if s == spans[j] || r.evals >= refinedMaxEvals {
					continue
				}
				old := spans[j]
				spans[j] = s
				if v := r.evaluate(spans); v.compare(sc) < 0 {
					sc, improved = v, true
					continue
				}
				spans[j] = old
			}
		}
		if !improved && r.exact {
			sc, improved = r.pairs(spans, sc)
		}
		if n > refinedSwapServers {
			continue
		}
		for j := range n {
			for k := j + 1; k < n && r.evals < refinedMaxEvals; k++ {
				a, b := spans[j], spans[k]
				if a == b || a.Len() > r.maxSpan[k] || b.Len() > r.maxSpan[j] {
					continue
				}
				spans[j], spans[k] = b, a
				if v := r.evaluate(spans); v.compare(sc) < 0 {
					sc, improved = v, true
					continue
				}
				spans[j], spans[k] = a, b
			}
		}
	}
	return spans, sc
}

// pairs tries every joint move of two servers (fleets scored exactly, at
// most refinedPairMoves combinations per pair), keeping the first strict
// improvement; it reports whether it found one.
func (r *refiner) pairs(spans []swarm.Span, sc refinedScore) (refinedScore, bool) {
	for j := range spans {
		for k := j + 1; k < len(spans); k++ {
			mj, mk := r.moves(j, spans[j]), r.moves(k, spans[k])
			if len(mj)*len(mk) > refinedPairMoves {
				continue
			}
			a, b := spans[j], spans[k]
			for _, x := range mj {
				for _, y := range mk {
					if x == a || y == b || r.evals >= refinedMaxEvals {
						continue
					}
					spans[j], spans[k] = x, y
					if v := r.evaluate(spans); v.compare(sc) < 0 {
						return v, true
					}
				}
			}
			spans[j], spans[k] = a, b
		}
	}
	return sc, false
}
