package placement

import (
	"fmt"
	"math"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// DefaultMinGain is the relative per-token gain (5% would be 0.05) below
// which Replan keeps a covered, adequately served fleet as it is.
const DefaultMinGain = 0.02

// ReplanOptions tune Replan.
type ReplanOptions struct {
	// MinGain is the relative gain (current - final) / current of the idle
	// per-token time (IdlePerToken, eq. 1) that a migration must exceed to
	// be applied when no block is uncovered or below capacity. In [0, 1).
	MinGain float64
	// HoldSessions is the number of attention caches (s_c bytes each) per
	// held block a server keeps free while it holds its old and new spans
	// at once during a make-before-break move; 0 counts weights only.
	HoldSessions int
	// SingleMove forbids splitting a move into grow-then-shrink (Migrate):
	// every server then moves at most once, in one step.
	SingleMove bool
}

// Reason says why Replan applies its migration or not.
type Reason uint8

const (
	// ReasonAtTarget: every alive server already hosts its target span
	// (after matching); nothing to move. Not applied.
	ReasonAtTarget Reason = iota + 1
	// ReasonUncovered: some block is hosted by no alive server and the
	// migration covers it. Applied.
	ReasonUncovered
	// ReasonBelowCapacity: some block has capacity C_b (sum of f_j, eq. 15)
	// below R and the migration raises it. Applied.
	ReasonBelowCapacity
	// ReasonGain: the estimated per-token gain exceeds MinGain. Applied.
	ReasonGain
	// ReasonSmallGain: the gain does not exceed MinGain and every block is
	// covered with capacity R. Not applied.
	ReasonSmallGain
	// ReasonBlocked: moves are wanted but no order of them keeps every
	// block covered (see Replanning.Blocked). Not applied.
	ReasonBlocked
)

// String names the reason for logs, tables and scenario scripts.
func (r Reason) String() string {
	switch r {
	case ReasonAtTarget:
		return "at-target"
	case ReasonUncovered:
		return "uncovered"
	case ReasonBelowCapacity:
		return "below-capacity"
	case ReasonGain:
		return "gain"
	case ReasonSmallGain:
		return "small-gain"
	case ReasonBlocked:
		return "blocked"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Replanning is the outcome of Replan.
type Replanning struct {
	// Target is the CG-BP plan (Alg. 1 lines 1-9) over the alive servers,
	// indexed like Input.Servers (dead servers host nothing), after the
	// target spans of identical servers were matched to their current spans
	// to load fewer bytes, or its mirror image when that is no slower and
	// loads fewer bytes (see Replan).
	Target Plan
	// Steps are the migration steps in order; the moves of one step run in
	// parallel, a step starts when the previous one has finished.
	Steps []Step
	// Blocked are the moves no step could take without uncovering a block.
	Blocked []Move
	// Final is each server's span after every step: Target.Spans, except
	// that blocked servers keep their current span.
	Final []swarm.Span
	// LoadBytes is the weight bytes all steps load, s_m per loaded block.
	LoadBytes int64
	// Apply reports whether the steps should be executed (see Reason).
	Apply bool
	// Reason says why Apply is what it is.
	Reason Reason
	// CurrentPerToken and FinalPerToken are IdlePerToken (eq. 1, seconds
	// per token) of the current and final spans; +Inf when some client
	// has no route.
	CurrentPerToken, FinalPerToken float64
	// Gain is (CurrentPerToken - FinalPerToken) / CurrentPerToken; 1 when
	// the current spans route nobody and the final ones do.
	Gain float64
	// Bound is the upper bound (17) (UpperBound, seconds per token) of the
	// target over the alive servers: no client's idle per-token time under
	// the target exceeds it (Theorem 3.5).
	Bound float64
	// Uncovered lists the blocks no alive server currently hosts.
	Uncovered []int
	// BelowCapacity lists the covered blocks whose current capacity C_b
	// (eq. 15 summed over their hosts) is below R and lower than in Final.
	BelowCapacity []int
}

// Replan computes the slow time scale of Alg. 2 of paper 003 for a live
// fleet: the CG-BP target plan over the alive servers and a
// make-before-break migration from the current spans to it, and decides
// whether the migration is worth applying.
//
// current[j] is server j's span now (empty: not serving, e.g. just
// joined); alive[j] false marks a server that left or died (its span no
// longer covers anything and it gets no target); nil alive means all are
// alive. The Input is validated as for CGBP, and R = in.Sessions.
//
// Target matching: CG-BP places servers by t~_j (eq. 14); servers with
// equal memory, tau, RTTs and caps are interchangeable, so within each
// group of identical servers the target spans are reassigned greedily by
// largest overlap with the current spans (exact matches first, ties by
// server then target index), which keeps an already well-placed server
// where it is and loads only s_m |target \ current| bytes per server.
// The mirror image of the target (every span reflected, block b to
// L-1-b) is scheduled too and replaces it when it is no slower
// (IdlePerToken), blocks no move and loads fewer bytes (bestCandidate).
//
// Schedule: Migrate (steps of parallel moves, MoveHold when memory allows
// both spans, else MoveDrain; no step uncovers a block). Decision, in this
// order: nothing to move (ReasonAtTarget); a block is uncovered and the
// final spans cover it (ReasonUncovered); a block has C_b < R (eq. 15) and
// the final spans raise it (ReasonBelowCapacity); Gain > MinGain
// (ReasonGain); otherwise not applied (ReasonBlocked when moves are
// blocked, else ReasonSmallGain). With blocked moves an applied migration
// stops at Final. The bound (17) of the target is reported as Bound.
//
// Errors wrap ErrBadInput (bad input, spans or options) or ErrInfeasible
// (the alive servers cannot cover the model, condition 18).
func Replan(in Input, current []swarm.Span, alive []bool, opt ReplanOptions) (Replanning, error) {
	if err := checkReplan(in, current, alive, opt); err != nil {
		return Replanning{}, err
	}
	isAlive := func(j int) bool { return alive == nil || alive[j] }
	cur := make([]swarm.Span, len(current))
	for j, s := range current {
		if isAlive(j) && !s.Empty() {
			cur[j] = s
		}
	}
	target, bound, err := aliveCGBP(in, isAlive)
	if err != nil {
		return Replanning{}, err
	}
	out := bestCandidate(in, cur, target, opt)
	out.Bound = bound
	out.CurrentPerToken = idlePerToken(in, cur)
	switch {
	case math.IsInf(out.CurrentPerToken, 1) && !math.IsInf(out.FinalPerToken, 1):
		out.Gain = 1
	case math.IsInf(out.CurrentPerToken, 1):
		out.Gain = 0
	default:
		out.Gain = (out.CurrentPerToken - out.FinalPerToken) / out.CurrentPerToken
	}
	curCap := blockCapacity(in, cur)
	finCap := blockCapacity(in, out.Final)
	coversHole, raisesCap := false, false
	for b := range in.Model.Blocks {
		if !hosted(cur, b) {
			out.Uncovered = append(out.Uncovered, b)
			coversHole = coversHole || hosted(out.Final, b)
		} else if curCap[b] < in.Sessions && finCap[b] > curCap[b] {
			out.BelowCapacity = append(out.BelowCapacity, b)
			raisesCap = true
		}
	}
	switch {
	case len(out.Steps) == 0 && len(out.Blocked) == 0:
		out.Reason = ReasonAtTarget
	case coversHole:
		out.Reason, out.Apply = ReasonUncovered, true
	case raisesCap:
		out.Reason, out.Apply = ReasonBelowCapacity, true
	case out.Gain > opt.MinGain:
		out.Reason, out.Apply = ReasonGain, true
	case len(out.Blocked) > 0:
		out.Reason = ReasonBlocked
	default:
		out.Reason = ReasonSmallGain
	}
	return out, nil
}

// bestCandidate matches and schedules the CG-BP target and its mirror
// image (block b -> L-1-b: the same capacities C_b, reflected, but chains
// read backwards may cost more) and keeps the mirror only when none of its
// moves is blocked, its spans are no slower (IdlePerToken) than CG-BP's,
// and it loads fewer bytes or the CG-BP target has blocked moves. It fills
// Target, Steps, Blocked, Final, LoadBytes and FinalPerToken.
func bestCandidate(in Input, cur []swarm.Span, target Plan, opt ReplanOptions) Replanning {
	eval := func(p Plan) Replanning {
		matchIdentical(in, &p, cur)
		r := Replanning{Target: p}
		r.Steps, r.Blocked, r.Final = schedule(in, cur, p.Spans, opt)
		for _, s := range r.Steps {
			r.LoadBytes += s.LoadBytes
		}
		r.FinalPerToken = idlePerToken(in, r.Final)
		return r
	}
	best := eval(target)
	mirror := target
	mirror.Spans = make([]swarm.Span, len(target.Spans))
	for j, s := range target.Spans {
		if !s.Empty() {
			mirror.Spans[j] = swarm.Span{Start: in.Model.Blocks - s.End, End: in.Model.Blocks - s.Start}
		}
	}
	m := eval(mirror)
	if len(m.Blocked) == 0 && m.FinalPerToken <= idlePerToken(in, target.Spans)*(1+1e-12) &&
		(len(best.Blocked) > 0 || m.LoadBytes < best.LoadBytes) {
		return m
	}
	return best
}

func checkReplan(in Input, current []swarm.Span, alive []bool, opt ReplanOptions) error {
	if err := in.Validate(); err != nil {
		return err
	}
	n := len(in.Servers)
	switch {
	case len(current) != n:
		return fmt.Errorf("%w: %d current spans, want one per server (%d)", ErrBadInput, len(current), n)
	case alive != nil && len(alive) != n:
		return fmt.Errorf("%w: alive has %d entries, want one per server (%d) or nil", ErrBadInput, len(alive), n)
	case math.IsNaN(opt.MinGain) || opt.MinGain < 0 || opt.MinGain >= 1:
		return fmt.Errorf("%w: min gain %g, want a fraction in [0, 1)", ErrBadInput, opt.MinGain)
	case opt.HoldSessions < 0:
		return fmt.Errorf("%w: hold sessions %d, want >= 0", ErrBadInput, opt.HoldSessions)
	}
	for j, s := range current {
		if s == (swarm.Span{}) {
			continue
		}
		if err := s.Validate(in.Model.Blocks); err != nil {
			return fmt.Errorf("%w: current[%d] (%s): %w", ErrBadInput, j, in.Servers[j].Name, err)
		}
	}
	return nil
}

// aliveCGBP runs CGBP over the alive servers and returns the plan indexed
// like in.Servers (dead servers: empty span, zero capacity) and its bound
// (17).
func aliveCGBP(in Input, alive func(int) bool) (Plan, float64, error) {
	sub := in
	sub.Servers, sub.Order = nil, nil
	var index []int
	for j, s := range in.Servers {
		if alive(j) {
			sub.Servers = append(sub.Servers, s)
			index = append(index, j)
		}
	}
	if len(index) == 0 {
		return Plan{}, 0, fmt.Errorf("%w: no alive server (want at least one)", ErrInfeasible)
	}
	p, err := CGBP(sub)
	if err != nil {
		return Plan{}, 0, fmt.Errorf("replan over %d alive servers: %w", len(index), err)
	}
	bound, err := UpperBound(sub)
	if err != nil {
		return Plan{}, 0, fmt.Errorf("replan over %d alive servers: %w", len(index), err)
	}
	blocks := make([]int, len(in.Servers))
	spans := make([]swarm.Span, len(in.Servers))
	for k, j := range index {
		blocks[j] = p.Spans[k].Len()
		spans[j] = p.Spans[k]
	}
	out := newPlan(in, "cgbp", blocks)
	out.Spans = spans
	for _, k := range p.Order {
		out.Order = append(out.Order, index[k])
	}
	return out, bound, nil
}

// matchIdentical reassigns target spans within groups of identical servers
// (same memory, tau, RTTs, prefill times and cap) to maximize the blocks
// each keeps: greedily, the pair (server, target) with the largest
// overlap |current ∩ target| first, exact matches before others, ties by
// server index then target index. Identical servers have identical m_j,
// f_j and t~_j, so the plan's per-token time and capacities are unchanged.
func matchIdentical(in Input, p *Plan, cur []swarm.Span) {
	done := make([]bool, len(in.Servers))
	for j := range in.Servers {
		if done[j] || p.Spans[j].Empty() {
			continue
		}
		var group []int
		for k := j; k < len(in.Servers); k++ {
			if !done[k] && !p.Spans[k].Empty() && identical(in.Servers[j], in.Servers[k]) {
				group = append(group, k)
				done[k] = true
			}
		}
		if len(group) < 2 {
			continue
		}
		targets := make([]swarm.Span, len(group))
		for i, k := range group {
			targets[i] = p.Spans[k]
		}
		takenS := make([]bool, len(group))
		takenT := make([]bool, len(group))
		assign := make([]swarm.Span, len(group))
		for range group {
			bs, bt, bScore := -1, -1, -1
			for si, k := range group {
				if takenS[si] {
					continue
				}
				for ti, t := range targets {
					if takenT[ti] {
						continue
					}
					score := 2 * cur[k].Intersect(t).Len()
					if cur[k] == t {
						score++ // an exact match beats an equal overlap
					}
					if score > bScore {
						bs, bt, bScore = si, ti, score
					}
				}
			}
			takenS[bs], takenT[bt] = true, true
			assign[bs] = targets[bt]
		}
		for i, k := range group {
			p.Spans[k] = assign[i]
		}
	}
}

func identical(a, b Server) bool {
	return a.MemoryBytes == b.MemoryBytes && a.Tau == b.Tau && a.MaxBlocks == b.MaxBlocks &&
		a.TauPrefill == b.TauPrefill && slices.Equal(a.RTT, b.RTT) && slices.Equal(a.RTTPrefill, b.RTTPrefill)
}

// hosted reports whether some span holds block b.
func hosted(spans []swarm.Span, b int) bool {
	return slices.ContainsFunc(spans, func(s swarm.Span) bool { return s.Contains(b) })
}

// blockCapacity returns C_b = sum of f_j (eq. 15) over the servers whose
// span holds block b.
func blockCapacity(in Input, spans []swarm.Span) []int {
	c := make([]int, in.Model.Blocks)
	for j, s := range spans {
		f := Capacity(in, j, s.Len())
		for b := s.Start; b < s.End; b++ {
			c[b] += f
		}
	}
	return c
}
