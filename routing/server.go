package routing

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// Sentinel errors; callers branch on them with errors.Is.
var (
	// ErrBadInput is returned (wrapped) when a Server or Request field is out
	// of range; the message names the field.
	ErrBadInput = errors.New("routing: bad input")
	// ErrNoRoute is returned (wrapped, as *NoRouteError) when no feasible
	// chain (Lemma 3.1) reaches the last block.
	ErrNoRoute = errors.New("routing: no route")
	// ErrBadChain is returned (wrapped, as *ChainError) by CheckChain for a
	// chain that violates Lemma 3.1.
	ErrBadChain = errors.New("routing: infeasible chain")
)

// UnlimitedCache as Server.CacheSlots means the server never makes a
// session wait for attention-cache memory (e.g. a full-range replica that
// does its own admission); its waiting time (20) is 0.
const UnlimitedCache = -1

// Server is what a client knows about one server when it routes a session:
// the server's advertised state (swarm.ServerInfo) plus the client's own RTT
// measurements.
type Server struct {
	// Name identifies the server in routes and errors.
	Name string
	// Span is the blocks the server hosts; [0, L) for a full-range server.
	Span swarm.Span
	// Tau is tau_j, the decode time per block per token, in seconds.
	Tau float64
	// TauBatch is the server's measured decode time per block of a batch
	// of single-token steps by batch size (swarm.ServerInfo.TauBatch),
	// or nil. With it, a session joining b running sessions is priced at
	// Tau * swarm.BatchFactor(TauBatch, b+1) per block (LinkCost): the
	// server steps them in one batched pass, each step slower than alone.
	TauBatch []swarm.BatchTau
	// RTT is t_cj, the per-token round trip time between this client and
	// the server, in seconds (eq. 1).
	RTT float64
	// TauPrefill is tau^I_j(l^I_max), the prefill time per block of a whole
	// input, in seconds. Used only when Request.Prefill is set (eq. 8).
	TauPrefill float64
	// RTTPrefill is t^I_cj(l^I_max), the per-input round trip time, in
	// seconds. Used only when Request.Prefill is set (eq. 8).
	RTTPrefill float64
	// CacheSlots is floor((M_j - s_m m_j) / s_c): how many block attention
	// caches (one block of one session each) the server holds in total, the
	// capacity term of eq. (20). UnlimitedCache (-1) disables waiting.
	CacheSlots int
	// Sessions are the server's open sessions: remaining time in seconds
	// (T_r^j) and caches held (M_r^j), in any order (eq. 20).
	Sessions []swarm.SessionLoad
	// AsOf is the time, in seconds on the caller's clock, at which
	// Sessions[].Remaining was measured; at Request.Now a session has
	// max(Remaining - (Now - AsOf), 0) left.
	AsOf float64
}

// Request describes the session being routed.
type Request struct {
	// Blocks is L, the number of blocks of the model.
	Blocks int
	// MaxLength is l_max, the most tokens the session generates (>= 1); it
	// weighs per-token time against waiting in WS-RR's link cost.
	MaxLength int
	// Now is the current time in seconds, on the same clock as Server.AsOf.
	Now float64
	// Prefill selects the all-tokens link cost (8), which also charges the
	// first token's prefill (TauPrefill, RTTPrefill); false uses (4).
	Prefill bool
}

// Hop is one server of a route.
type Hop struct {
	// Server is the index of the server in the slice given to the router.
	Server int
	// Name is that server's name.
	Name string
	// Span is the blocks this server processes for the session: the
	// sub-span [a_i+m_i, a_j+m_j) of its hosted span (Lemma 3.1).
	Span swarm.Span
	// PerToken is t^c_ij, eq. (4) (or (8) with Request.Prefill), in seconds.
	PerToken float64
	// Wait is t^W_ij(t), eq. (20), in seconds.
	Wait float64
}

// Route is a chain of servers for one session.
type Route struct {
	// Hops are the servers in processing order.
	Hops []Hop
	// PerToken is the sum of the hops' t^c_ij: the per-token time of the
	// session once started, in seconds.
	PerToken float64
	// Wait is the largest hop wait: the session can start at Now + Wait.
	Wait float64
	// Cost is the objective the router minimized, in seconds: for WS-RR the
	// waiting-penalized cost sum_hops (t^W + l_max t^c), an upper bound on
	// the completion time (Corollary 3.7); for OptimizedRR (21a); for
	// Petals the PETALS heuristic path weight.
	Cost float64
}

// Chain returns the server indices of the route in order.
func (r Route) Chain() []int {
	c := make([]int, len(r.Hops))
	for i, h := range r.Hops {
		c[i] = h.Server
	}
	return c
}

// LinkCost returns t^c_ij for server s processing k blocks: eq. (4),
// t_cj + tau_j k, or with req.Prefill the all-tokens average (8),
// (t^I_cj + tau^I_j k)/l_max + (l_max - 1)(t_cj + tau_j k)/l_max. The paper
// prints (8)'s first bracket with t^{c,I}_ij and t^c_ij, which already
// contain the compute term; we read them as the RTTs t^I_cj and t_cj so
// that compute is counted once, which is also what the authors' simulator
// charges (WS_RR.m: (RTT_input + (lc-1) RTT) + (tau_input + (lc-1) tau) k).
//
// tau_j is the server's Tau scaled by its batch curve for the sessions
// running at req.Now plus this one (Server.TauBatch); without a curve,
// Tau.
func LinkCost(s Server, k int, req Request) float64 {
	decode := s.RTT + s.batchTau(req.Now)*float64(k)
	if !req.Prefill {
		return decode
	}
	l := float64(req.MaxLength)
	return (s.RTTPrefill+s.TauPrefill*float64(k))/l + (l-1)/l*decode
}

// batchTau is tau_j for one more session at time now: Tau *
// BatchFactor(TauBatch, running + 1), counting as running the sessions with
// time left at now.
func (s Server) batchTau(now float64) float64 {
	if len(s.TauBatch) == 0 {
		return s.Tau
	}
	running := 0
	for _, r := range s.Sessions {
		if r.Remaining-(now-s.AsOf) > 0 {
			running++
		}
	}
	return s.Tau * swarm.BatchFactor(s.TauBatch, running+1)
}

// WaitTime returns t^W(t) of eq. (20) for server s and a session that needs
// `need` block caches there, at time now:
//
//	min{ T_k : CacheSlots - sum_{r > k} M_r >= need },  T_0 = 0,
//
// with the open sessions sorted by remaining time T_r (ascending). It is 0
// when the caches are free now and +Inf when the server can never hold
// them (CacheSlots < need). UnlimitedCache gives 0.
func WaitTime(s Server, need int, now float64) float64 {
	w := newWaiter(s, now)
	return w.wait(need)
}

// zeroRemain and zeroAfter are the (read-only) waiter tables of a server
// without open sessions: T_0 = 0 and nothing held.
var (
	zeroRemain = [1]float64{0}
	zeroAfter  = [1]int{0}
)

// waiter precomputes eq. (20) for one server.
type waiter struct {
	slots  int
	remain []float64 // T_r ascending
	after  []int     // after[k] = sum_{r > k} M_r (1-based k; after[0] = all held)
}

func newWaiter(s Server, now float64) waiter {
	w := waiter{slots: s.CacheSlots}
	if s.CacheSlots < 0 {
		return w
	}
	if len(s.Sessions) == 0 {
		w.remain, w.after = zeroRemain[:], zeroAfter[:]
		return w
	}
	elapsed := now - s.AsOf
	type sess struct {
		t float64
		m int
	}
	ss := make([]sess, len(s.Sessions))
	held := 0
	for i, l := range s.Sessions {
		ss[i] = sess{max(l.Remaining-elapsed, 0), l.Caches}
		held += l.Caches
	}
	slices.SortStableFunc(ss, func(a, b sess) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	w.remain = make([]float64, len(ss)+1)
	w.after = make([]int, len(ss)+1)
	w.after[0] = held
	for k, x := range ss {
		w.remain[k+1] = x.t
		w.after[k+1] = w.after[k] - x.m
	}
	return w
}

func (w waiter) wait(need int) float64 {
	if w.slots < 0 {
		return 0
	}
	for k := range w.after {
		if w.slots-w.after[k] >= need {
			return w.remain[k]
		}
	}
	return math.Inf(1)
}

// free returns the cache slots free now (for the PETALS baseline).
func (w waiter) free() int {
	if w.slots < 0 {
		return math.MaxInt
	}
	// sessions already finished at `now` (remaining 0) have released theirs
	k := 0
	for k+1 < len(w.remain) && w.remain[k+1] == 0 {
		k++
	}
	return w.slots - w.after[k]
}

// validate checks servers and request, naming the first bad field.
func validate(servers []Server, req Request) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, args...))
	}
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	switch {
	case req.Blocks <= 0:
		return bad("request blocks L = %d, want > 0", req.Blocks)
	case req.MaxLength < 1:
		return bad("request max length l_max = %d, want >= 1", req.MaxLength)
	case math.IsNaN(req.Now) || math.IsInf(req.Now, 0):
		return bad("request time now = %g, want a finite number of seconds", req.Now)
	}
	for j, s := range servers {
		if err := s.Span.Validate(req.Blocks); err != nil {
			return bad("servers[%d] (%s).span: %v", j, s.Name, err)
		}
		switch {
		case !ok(s.Tau):
			return bad("servers[%d] (%s).tau = %g, want a finite number of seconds >= 0", j, s.Name, s.Tau)
		case !ok(s.RTT):
			return bad("servers[%d] (%s).rtt = %g, want a finite number of seconds >= 0", j, s.Name, s.RTT)
		case !ok(s.TauPrefill):
			return bad("servers[%d] (%s).tau_prefill = %g, want a finite number of seconds >= 0", j, s.Name, s.TauPrefill)
		case !ok(s.RTTPrefill):
			return bad("servers[%d] (%s).rtt_prefill = %g, want a finite number of seconds >= 0", j, s.Name, s.RTTPrefill)
		case s.CacheSlots < UnlimitedCache:
			return bad("servers[%d] (%s).cache_slots = %d, want >= 0 (or -1: unlimited)", j, s.Name, s.CacheSlots)
		case math.IsNaN(s.AsOf) || math.IsInf(s.AsOf, 0):
			return bad("servers[%d] (%s).as_of = %g, want a finite time in seconds", j, s.Name, s.AsOf)
		}
		for i, bt := range s.TauBatch {
			if bt.Batch < 1 || (i > 0 && bt.Batch <= s.TauBatch[i-1].Batch) || !ok(bt.Tau) {
				return bad("servers[%d] (%s).tau_batch[%d] = {batch %d, tau %g}, want batches >= 1 in increasing order and finite times >= 0",
					j, s.Name, i, bt.Batch, bt.Tau)
			}
		}
		for r, l := range s.Sessions {
			if math.IsNaN(l.Remaining) || math.IsInf(l.Remaining, 0) || l.Caches < 0 {
				return bad("servers[%d] (%s).sessions[%d] = {remaining %g, caches %d}, want a finite time and caches >= 0",
					j, s.Name, r, l.Remaining, l.Caches)
			}
		}
	}
	return nil
}

// FromServerInfo builds the routing view of a server from what IT
// advertises (swarm.ServerInfo) and what this client measured:
//
//   - CacheSlots = floor(C_j / s_c) (eq. 20), with C_j =
//     info.CacheBytesCapacity, the server's M_j - s_m m_j as the server
//     computes it for its own weights (its dtype, its quantization), and
//     s_c its own attention-cache bytes per block for a session of
//     maxLength tokens (l^I_max + l_max): the mean over its span of the
//     per-block bytes, info.CacheBytes(info.Span, maxLength) / m_j, which
//     is info.CacheBytesPerToken * maxLength when no block slides and less
//     when some hold only their window (Gemma 3, Mistral v0.1), so that
//     m_j slots are exactly one session over the whole span. The client's
//     copy of the model plays no part, so a Q8_0 or GPU server is routed by
//     its own memory. UnlimitedCache for a full-range replica (it admits
//     sessions itself) or a server that advertises neither figure;
//   - TauPrefill = info.TauI.At(inputLength) (tau^I_j(l^I_max));
//   - TauBatch = info.TauBatch, so that LinkCost prices a busy batching
//     server by its batch curve;
//   - RTT and RTTPrefill are this client's measurements, in seconds;
//   - asOf is when the client read info.Sessions, in seconds on the clock
//     it will pass as Request.Now.
func FromServerInfo(info swarm.ServerInfo, maxLength, inputLength int, rtt, rttPrefill, asOf float64) Server {
	s := Server{
		Name:       info.ID,
		Span:       info.Span,
		Tau:        info.Tau,
		TauBatch:   info.TauBatch,
		RTT:        rtt,
		TauPrefill: info.TauI.At(inputLength),
		RTTPrefill: rttPrefill,
		CacheSlots: UnlimitedCache,
		Sessions:   info.Sessions,
		AsOf:       asOf,
	}
	m := int64(info.Span.Len())
	cache := info.CacheBytes(info.Span, maxLength) // s_c * m_j
	if !info.FullRange && info.CacheBytesCapacity > 0 && cache > 0 {
		if info.CacheBytesCapacity > math.MaxInt64/m {
			s.CacheSlots = int(info.CacheBytesCapacity / (cache / m))
		} else {
			s.CacheSlots = int(info.CacheBytesCapacity * m / cache)
		}
	}
	return s
}
