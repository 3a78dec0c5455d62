package placement

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// TotalBlocks returns the left-hand side of condition (18) of paper 003:
// sum over servers of min(floor(M_j / (s_m + s_c R)), L) (each term also
// capped by Server.MaxBlocks), for R = in.Sessions.
func TotalBlocks(in Input) int {
	have := 0
	for j := range in.Servers {
		have += ConservativeBlocks(in, j)
	}
	return have
}

// Feasible reports condition (18) of paper 003: CG-BP can host every block
// for R = in.Sessions concurrent sessions iff TotalBlocks(in) >= L.
func Feasible(in Input) bool { return TotalBlocks(in) >= in.Model.Blocks }

// MaxSessions returns the right-hand side of (19) of paper 003,
//
//	floor((sum_j M_j - s_m (L + |V_s|)) / (s_c (L + |V_s|))),
//
// the largest R for which (19) guarantees (18); 0 when even that is
// negative. (19) ignores Server.MaxBlocks; LargestFeasibleSessions is exact.
// With s_c per block (Model.BlockCacheBytes) s_c is the largest, CacheBytes:
// the guarantee still holds, since no m blocks need more than m*CacheBytes.
func MaxSessions(in Input) int {
	var sum int64
	for _, s := range in.Servers {
		sum += s.MemoryBytes
	}
	n := int64(in.Model.Blocks + len(in.Servers))
	r := (sum - in.Model.BlockBytes*n) / (in.Model.CacheBytes * n)
	if r < 0 {
		return 0
	}
	return int(min(r, math.MaxInt32))
}

// LargestFeasibleSessions returns the largest R >= 1 for which (18) holds,
// found by bisection ((18) is monotone in R), or 0 when it fails for R = 1.
func LargestFeasibleSessions(in Input) int {
	ok := func(r int) bool {
		in.Sessions = r
		return Feasible(in)
	}
	if !ok(1) {
		return 0
	}
	var maxMem int64
	for _, s := range in.Servers {
		maxMem = max(maxMem, s.MemoryBytes)
	}
	lo, hi := 1, int(min(maxMem/in.Model.minCacheBytes()+1, math.MaxInt32)) // ok(lo), !ok(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// PoissonLoad returns the mean and standard deviation of the number of
// sessions arriving during one session of sessionTime seconds when they
// arrive as a Poisson process of rate arrivalRate per second: both
// parameters of ChooseR (paper 003 Sec. 3.3.1 and 4.1).
func PoissonLoad(arrivalRate, sessionTime float64) (mean, std float64) {
	mean = arrivalRate * sessionTime
	return mean, math.Sqrt(mean)
}

// ChooseR picks the design parameter R as paper 003 does after Corollary
// 3.6: the mean plus one standard deviation of the number of new sessions
// during one session (see PoissonLoad), capped by (19). The sum is rounded
// to the nearest integer as in the authors' simulator
// (test_general_case_online.m) and is at least 1. The (19) cap applies only
// when (19) is at least 1 (it is a sufficient condition and can be 0 for a
// fleet that is feasible for small R); R is also capped by
// LargestFeasibleSessions so that CG-BP stays feasible when
// Server.MaxBlocks caps bind (without caps (19) implies (18)).
// in.Sessions is ignored. It returns an error wrapping ErrInfeasible when
// not even R = 1 satisfies (18), and ErrBadInput for bad input.
func ChooseR(in Input, mean, std float64) (int, error) {
	in.Sessions = 1
	if err := in.Validate(); err != nil {
		return 0, err
	}
	if math.IsNaN(mean) || math.IsNaN(std) || mean < 0 || std < 0 {
		return 0, fmt.Errorf("%w: load mean %g and std %g, want numbers >= 0", ErrBadInput, mean, std)
	}
	limit := LargestFeasibleSessions(in)
	if limit == 0 {
		return 0, &InfeasibleError{Sessions: 1, Need: in.Model.Blocks, Have: TotalBlocks(in), Uncovered: -1}
	}
	if m := MaxSessions(in); m >= 1 {
		limit = min(limit, m)
	}
	want := math.Round(mean + std)
	if want >= float64(limit) {
		return limit, nil
	}
	return max(int(want), 1), nil
}

// UpperBound returns the bound (17) of Theorem 3.5 of paper 003 on the
// average per-token time of CG-BP with the optimal routing, in seconds,
// valid while at most R = in.Sessions sessions run concurrently (Cor. 3.6):
//
//	sum_{j=1..K} t~_j m_j - tau_K (sum_{j=1..K} m_j - L)
//
// with servers in increasing t~_j (eq. 14), m_j from Alg. 1 line 1 and K the
// fewest of them covering L blocks. It is the per-token time of a client
// farthest from every server routed through servers 1..K. Errors wrap
// ErrBadInput or ErrInfeasible ((18) fails).
func UpperBound(in Input) (float64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	blocks := make([]int, len(in.Servers))
	amort := make([]float64, len(in.Servers))
	for j := range in.Servers {
		blocks[j] = ConservativeBlocks(in, j)
		amort[j] = Amortized(in, j, blocks[j])
	}
	sum, bound := 0, 0.0
	for _, j := range amortizedOrder(amort, blocks) {
		sum += blocks[j]
		bound += amort[j] * float64(blocks[j])
		if sum >= in.Model.Blocks {
			return bound - in.Servers[j].Tau*float64(sum-in.Model.Blocks), nil
		}
	}
	return 0, &InfeasibleError{Sessions: in.Sessions, Need: in.Model.Blocks, Have: sum, Uncovered: -1}
}

// ClientLowerBound returns T_c^o of (B.8) in paper 003 (Lemma B.1) for
// client c, in seconds: no placement and routing gives a session of client c
// a smaller per-token time. With m̄_j = min(floor(M_j/(s_m+s_c)), L) (and
// Server.MaxBlocks) and t~_{j,c} = tau_j + t_cj/m̄_j, it fills the L blocks
// from the servers of smallest t~_{j,c}, m̄_j blocks each. Errors wrap
// ErrBadInput, or ErrInfeasible when even one session does not fit.
func ClientLowerBound(in Input, c int) (float64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	if c < 0 || c >= len(in.Clients) {
		return 0, fmt.Errorf("%w: client %d, want an index in [0, %d)", ErrBadInput, c, len(in.Clients))
	}
	type cand struct {
		m int
		t float64
	}
	cands := make([]cand, 0, len(in.Servers))
	for j, s := range in.Servers {
		m := in.capBlocks(j, blocksFor(s.MemoryBytes, in.Model, 1))
		if m > 0 {
			cands = append(cands, cand{m, s.Tau + s.RTT[c]/float64(m)})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.t, b.t) })
	left, bound := in.Model.Blocks, 0.0
	for _, x := range cands {
		k := min(x.m, left)
		bound += x.t * float64(k)
		left -= k
		if left == 0 {
			return bound, nil
		}
	}
	return 0, &InfeasibleError{Sessions: 1, Need: in.Model.Blocks, Have: in.Model.Blocks - left, Uncovered: -1}
}

// LowerBound returns the lower bound of Appendix B.4 of paper 003 on the
// optimal average per-token time over all sessions, in seconds:
// T^o >= (1/R) sum_c |R_c| T_c^o, with |R_c| from in.Demand (nil: R split
// evenly) and T_c^o from ClientLowerBound (B.8).
func LowerBound(in Input) (float64, error) {
	return demandAverage(in, ClientLowerBound)
}

// demandAverage returns (1/R) sum_c |R_c| perClient(in, c), |R_c| from
// in.Demand (nil: R split evenly), after validating in.
func demandAverage(in Input, perClient func(Input, int) (float64, error)) (float64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	total := 0.0
	for c, d := range in.demand() {
		if d == 0 {
			continue
		}
		t, err := perClient(in, c)
		if err != nil {
			return 0, err
		}
		total += float64(d) * t
	}
	return total / float64(in.Sessions), nil
}

// sessionBlocks returns the most blocks one hop of a single session can
// process on server j: the largest k with s_m k + k min_b s_c(b) <= M_j
// (and min(., L), Server.MaxBlocks). A hop that processes k blocks needs
// the server to hold at least those k blocks (s_m k) plus the session's
// cache on them (at least k times the smallest s_c(b), exactly s_c k with
// one s_c): the memory constraint (6b) with one session. Without
// Model.BlockCacheBytes it is m̄_j of (B.8).
func sessionBlocks(in Input, j int) int {
	per := in.Model.BlockBytes + in.Model.minCacheBytes()
	return in.capBlocks(j, in.Servers[j].MemoryBytes/per)
}

// ClientSessionBound returns the exact single-session lower bound on the
// per-token time of a session of client c, in seconds: the least
//
//	sum over hops j of (t_cj + tau_j k_j)    (eq. 4)
//
// over chains that use each server at most once (a chain of Lemma 3.1
// leaves a server at the end of its span, so it never returns to it) with
// k_j >= 1 blocks on hop j, k_j <= sessionBlocks(j) and sum_j k_j = L. It
// is a 0/1 knapsack over servers, solved exactly by dynamic programming
// over (servers considered, blocks covered) in O(|V_s| L^2) time. Unlike
// (B.8), which charges t_cj / m̄_j per block (a fractional relaxation of the
// same problem), it charges the full RTT of every hop, so
// (B.8) <= ClientSessionBound <= the per-token time of any session of
// client c under any placement and routing (at any R). Errors wrap
// ErrBadInput, or ErrInfeasible when no chain covers the L blocks.
func ClientSessionBound(in Input, c int) (float64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	if c < 0 || c >= len(in.Clients) {
		return 0, fmt.Errorf("%w: client %d, want an index in [0, %d)", ErrBadInput, c, len(in.Clients))
	}
	l := in.Model.Blocks
	dp := make([]float64, l+1) // dp[b]: least time to process b blocks
	for b := 1; b <= l; b++ {
		dp[b] = math.Inf(1)
	}
	most := 0
	for j, s := range in.Servers {
		m := sessionBlocks(in, j)
		most += m
		for b := l; b >= 1; b-- { // descending: each server is used once
			for k := 1; k <= min(m, b); k++ {
				if v := dp[b-k] + s.RTT[c] + s.Tau*float64(k); v < dp[b] {
					dp[b] = v
				}
			}
		}
	}
	if math.IsInf(dp[l], 1) {
		return 0, &InfeasibleError{Sessions: 1, Need: l, Have: most, Uncovered: -1}
	}
	return dp[l], nil
}

// SessionBound returns the exact single-session lower bound on the
// average per-token time over all sessions, in seconds:
// (1/R) sum_c |R_c| ClientSessionBound(c), with |R_c| from in.Demand (nil:
// R split evenly). Every session of client c takes at least
// ClientSessionBound(c) whatever the other sessions do, so the bound holds
// for every placement and routing; it is at least LowerBound (B.8).
// Errors are ClientSessionBound's.
func SessionBound(in Input) (float64, error) {
	return demandAverage(in, ClientSessionBound)
}

// FixedPointR returns a design parameter R that is consistent with the
// session time it produces: paper 003 picks R = mean + std of the Poisson
// arrivals during one session (ChooseR, PoissonLoad), from the time of a
// session placed for R = 1, but a placement for a larger R hosts fewer
// blocks per server (Alg. 1 line 1), so sessions take more hops and longer,
// and more of them overlap than R. FixedPointR iterates
//
//	R_0 = ChooseR(rate * T(1)),  R_{k+1} = ChooseR(rate * T(R_k))
//
// where sessionTime(r) = T(r) is the time of one session, in seconds, on an
// idle fleet placed for R = r (the caller's placement and routing). It
// stops when R_{k+1} = R_k, and on a cycle returns the largest R of the
// cycle (the most capacity); at most 32 steps, then the largest R seen.
// steps lists R_0, R_1, ... as computed. Errors are ChooseR's or
// sessionTime's (wrapped).
func FixedPointR(in Input, rate float64, sessionTime func(r int) (float64, error)) (r int, steps []int, err error) {
	next := func(r int) (int, error) {
		t, err := sessionTime(r)
		if err != nil {
			return 0, fmt.Errorf("session time at R = %d: %w", r, err)
		}
		mean, std := PoissonLoad(rate, t)
		return ChooseR(in, mean, std)
	}
	r, err = next(1)
	if err != nil {
		return 0, nil, err
	}
	steps = []int{r}
	for range 32 {
		nr, err := next(r)
		if err != nil {
			return 0, steps, err
		}
		if nr == r {
			return r, steps, nil
		}
		if i := slices.Index(steps, nr); i >= 0 {
			return slices.Max(steps[i:]), append(steps, nr), nil
		}
		steps = append(steps, nr)
		r = nr
	}
	return slices.Max(steps), steps, nil
}
