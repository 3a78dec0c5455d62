package placement

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// ConservativeBlocks returns m_j of Alg. 1 line 1 for server j:
// min(floor(M_j / (s_m + s_c R)), L), also capped by Server.MaxBlocks.
// It is 0 when the server cannot hold one block plus R attention caches.
func ConservativeBlocks(in Input, j int) int {
	return in.capBlocks(j, blocksFor(in.Servers[j].MemoryBytes, in.Model, int64(in.Sessions)))
}

// Capacity returns f_j of eq. (15): floor((M_j - s_m m) / (s_c m)), the
// number of sessions server j can hold when each uses all m of its blocks;
// with s_c per block, s_c m is Model.WindowCacheBytes(m), the m blocks
// that need the most. It returns 0 for m <= 0 or when the blocks alone do
// not fit.
func Capacity(in Input, j, m int) int {
	if m <= 0 {
		return 0
	}
	free := in.Servers[j].MemoryBytes - in.Model.BlockBytes*int64(m)
	if free <= 0 {
		return 0
	}
	return int(free / in.Model.WindowCacheBytes(m))
}

// CacheSlots returns floor((M_j - s_m m) / s_c), the number of block
// attention caches server j can hold next to m blocks: the capacity term of
// the waiting time (20). With s_c per block, s_c is the mean over the m
// blocks that need the most (WindowCacheBytes(m) / m), so m slots are one
// session over them. It returns 0 when the blocks alone do not fit.
func CacheSlots(in Input, j, m int) int {
	free := in.Servers[j].MemoryBytes - in.Model.BlockBytes*int64(max(m, 0))
	if free <= 0 {
		return 0
	}
	if m <= 0 || in.Model.BlockCacheBytes == nil {
		return int(free / in.Model.CacheBytes)
	}
	return slotsFor(free, min(m, in.Model.Blocks), in.Model.WindowCacheBytes(m))
}

// Amortized returns t~_j of eq. (14), tau_j + t*_j / m with
// t*_j = max_c t_cj, in seconds per block; +Inf for m <= 0.
func Amortized(in Input, j, m int) float64 {
	if m <= 0 {
		return math.Inf(1)
	}
	s := in.Servers[j]
	return s.Tau + s.maxRTT()/float64(m)
}

// CGBP runs Conservative Greedy Block Placement (paper 003, Alg. 1 lines
// 1-9, Alg. 2 lines 1-9) for R = in.Sessions:
//
//	line 1: m_j = min(floor(M_j/(s_m + s_c R)), L)
//	line 3: servers in increasing t~_j (eq. 14), ties by index
//	line 5: while some block has C_b < R, a_j maximizes the window sum of
//	        T_b over windows holding an under-served block (ties: smallest a)
//	line 7: otherwise a_j minimizes the sorted window (C_a..C_{a+m_j-1})
//	        lexicographically (ties: smallest a)
//	lines 8-9: update T_b and C_b += f_j (eq. 15) on the window.
//
// Servers with m_j = 0 host nothing. When (18) fails, CGBP still returns the
// greedy plan (some blocks uncovered) together with an *InfeasibleError
// (errors.Is(err, ErrInfeasible)); other errors wrap ErrBadInput.
func CGBP(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	blocks := make([]int, len(in.Servers))
	for j := range in.Servers {
		blocks[j] = ConservativeBlocks(in, j)
	}
	return greedy(in, "cgbp", blocks)
}

// greedy runs Alg. 1 lines 2-9 with the given m_j (line 1 or another rule).
func greedy(in Input, name string, blocks []int) (Plan, error) {
	plan := newPlan(in, name, blocks)
	st := newGreedyState(in.Model.Blocks, in.Sessions)
	plan.Order = amortizedOrder(plan.Amortized, blocks)
	for _, j := range plan.Order {
		a := st.choose(blocks[j])
		plan.Spans[j] = swarm.Span{Start: a, End: a + blocks[j]}
		st.place(a, blocks[j], plan.Capacity[j], plan.Amortized[j])
	}
	return plan, coverage(in, plan, blocks)
}

// newPlan fills the per-server quantities for the given block counts; spans
// are left empty.
func newPlan(in Input, name string, blocks []int) Plan {
	n := len(in.Servers)
	p := Plan{
		Algorithm:  name,
		Spans:      make([]swarm.Span, n),
		Capacity:   make([]int, n),
		CacheSlots: make([]int, n),
		Amortized:  make([]float64, n),
		Sessions:   in.Sessions,
	}
	for j, m := range blocks {
		if m <= 0 {
			continue
		}
		p.Capacity[j] = Capacity(in, j, m)
		p.CacheSlots[j] = CacheSlots(in, j, m)
		p.Amortized[j] = Amortized(in, j, m)
	}
	return p
}

// amortizedOrder returns the servers with blocks > 0 in increasing t~_j,
// ties by index (Alg. 1 line 3; a stable sort as in the authors' code).
func amortizedOrder(amortized []float64, blocks []int) []int {
	order := make([]int, 0, len(blocks))
	for j, m := range blocks {
		if m > 0 {
			order = append(order, j)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(amortized[a], amortized[b]) })
	return order
}

// coverage returns an *InfeasibleError when the plan leaves a block
// unhosted (or eq. 18 fails).
func coverage(in Input, plan Plan, blocks []int) error {
	have := 0
	for _, m := range blocks {
		have += m
	}
	covered := make([]bool, in.Model.Blocks)
	for _, s := range plan.Spans {
		for b := s.Start; b < s.End; b++ {
			covered[b] = true
		}
	}
	if i := slices.Index(covered, false); i >= 0 || have < in.Model.Blocks {
		return &InfeasibleError{Sessions: in.Sessions, Need: in.Model.Blocks, Have: have, Uncovered: i}
	}
	return nil
}

// greedyState holds C_b and T_b of Alg. 1 for blocks 0..L-1.
//
// T_b is kept in the form T_b = t~_0 U_b + V_b, where U_b = max(R - C_b, 0)
// is the demand still served by the dummy server 0 and V_b the amortized
// time of the demand real servers serve: line 2 sets U_b = R, V_b = 0, and
// line 8 moves s = min(max(R - C_b, 0), f_j) sessions from the dummy to
// server j (U_b -= s, V_b += t~_j s). The paper only asks t~_0 to be "large"
// (> every t~_j); we take the limit t~_0 -> infinity, so window sums of T_b
// compare lexicographically as (sum U_b, sum V_b). For placement from
// scratch this gives the same argmax as any t~_0 > max_j t~_j (the authors'
// code uses max_j t~_j + 1), and it stays well defined for Incremental,
// where the fixed spans need not be contiguous.
type greedyState struct {
	r int
	c []int     // C_b: total capacity f_j of servers hosting block b
	v []float64 // V_b: amortized time of the served part of T_b
	// scratch for line 7: distinct C values, each block's rank among
	// them, and histograms of ranks for the current and best windows
	vals, rank, win, best []int
}

func newGreedyState(l, r int) *greedyState {
	return &greedyState{r: r, c: make([]int, l), v: make([]float64, l)}
}

func (st *greedyState) unserved(b int) int { return max(st.r-st.c[b], 0) }

// choose returns the 0-based start a_j-1 for a server with m blocks
// (Alg. 1 lines 4-7).
func (st *greedyState) choose(m int) int {
	l := len(st.c)
	if slices.ContainsFunc(st.c, func(c int) bool { return c < st.r }) {
		// line 5: argmax of sum T_b over windows holding an under-served
		// block; ties go to the smallest a.
		bestA, bestU, bestV := -1, 0, 0.0
		u := 0
		for b := 0; b < m; b++ {
			u += st.unserved(b)
		}
		for a := 0; a+m <= l; a++ {
			if a > 0 {
				u += st.unserved(a+m-1) - st.unserved(a-1)
			}
			if u == 0 {
				continue // no under-served block in the window
			}
			if bestA >= 0 && u < bestU {
				continue
			}
			v := 0.0
			for b := a; b < a+m; b++ {
				v += st.v[b]
			}
			if bestA < 0 || u > bestU || v > bestV {
				bestA, bestU, bestV = a, u, v
			}
		}
		return bestA
	}
	// line 7: argmin over windows of the sorted tuple (C_a..C_{a+m-1}) in
	// lexicographic order; ties go to the smallest a. Two sorted tuples of
	// the same length compare like their histograms over the distinct
	// values of C: at the smallest value whose counts differ, the tuple
	// holding more copies is the smaller one. Histograms slide in O(1).
	// The distinct values are few and C comes in runs of equal values, so
	// an insertion-sorted set with run skipping beats sorting all of C.
	st.vals = st.vals[:0]
	for b, c := range st.c {
		if b > 0 && c == st.c[b-1] {
			continue
		}
		if i, found := slices.BinarySearch(st.vals, c); !found {
			st.vals = slices.Insert(st.vals, i, c)
		}
	}
	d := len(st.vals)
	st.rank = slices.Grow(st.rank[:0], l)[:l]
	for b, c := range st.c {
		if b > 0 && c == st.c[b-1] {
			st.rank[b] = st.rank[b-1]
			continue
		}
		st.rank[b], _ = slices.BinarySearch(st.vals, c)
	}
	st.win = append(st.win[:0], make([]int, d)...)
	for b := 0; b < m; b++ {
		st.win[st.rank[b]]++
	}
	st.best = append(st.best[:0], st.win...)
	bestA := 0
	for a := 1; a+m <= l; a++ {
		st.win[st.rank[a-1]]--
		st.win[st.rank[a+m-1]]++
		for r := range d {
			if st.win[r] != st.best[r] {
				if st.win[r] > st.best[r] {
					copy(st.best, st.win)
					bestA = a
				}
				break
			}
		}
	}
	return bestA
}

// place applies Alg. 1 lines 8-9 for a server with capacity f and amortized
// time t on blocks [a, a+m).
func (st *greedyState) place(a, m, f int, t float64) {
	for b := a; b < a+m; b++ {
		s := min(st.unserved(b), f)
		st.v[b] += t * float64(s)
		st.c[b] += f
	}
}

// Incremental returns the span CG-BP's rule gives server joiner when the
// other servers keep the spans in fixed (indexed like in.Servers; empty
// spans host nothing; fixed[joiner] is ignored). The fixed servers are
// replayed through Alg. 1 lines 8-9 in increasing t~_j (eq. 14, with m_j
// their actual span length and f_j per eq. 15, clamped at 0), then the
// joiner gets m_j by line 1 and its start by lines 4-7. It is what
// `swarm serve --blocks auto` uses when one server joins a live swarm.
//
// Errors wrap ErrBadInput (bad spans or input) or ErrInfeasible (the joiner
// cannot hold one block plus R attention caches).
func Incremental(in Input, fixed []swarm.Span, joiner int) (swarm.Span, error) {
	if err := in.Validate(); err != nil {
		return swarm.Span{}, err
	}
	if joiner < 0 || joiner >= len(in.Servers) {
		return swarm.Span{}, fmt.Errorf("%w: joiner = %d, want a server index in [0, %d)", ErrBadInput, joiner, len(in.Servers))
	}
	if len(fixed) != len(in.Servers) {
		return swarm.Span{}, fmt.Errorf("%w: fixed has %d spans, want one per server (%d)", ErrBadInput, len(fixed), len(in.Servers))
	}
	blocks := make([]int, len(in.Servers))
	for j, s := range fixed {
		if j == joiner || s == (swarm.Span{}) {
			continue
		}
		if err := s.Validate(in.Model.Blocks); err != nil {
			return swarm.Span{}, fmt.Errorf("%w: fixed[%d] (%s): %w", ErrBadInput, j, in.Servers[j].Name, err)
		}
		blocks[j] = s.Len()
	}
	m := ConservativeBlocks(in, joiner)
	if m == 0 {
		return swarm.Span{}, fmt.Errorf("%w: server %s (%d bytes) cannot hold one block (%d bytes) plus R = %d attention caches (%d bytes each)",
			ErrInfeasible, in.Servers[joiner].Name, in.Servers[joiner].MemoryBytes, in.Model.BlockBytes, in.Sessions, in.Model.CacheBytes)
	}
	plan := newPlan(in, "cgbp-incremental", blocks)
	st := newGreedyState(in.Model.Blocks, in.Sessions)
	for _, j := range amortizedOrder(plan.Amortized, blocks) {
		st.place(fixed[j].Start, blocks[j], plan.Capacity[j], plan.Amortized[j])
	}
	a := st.choose(m)
	return swarm.Span{Start: a, End: a + m}, nil
}
