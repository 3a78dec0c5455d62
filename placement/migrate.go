package placement

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// MoveKind is how a server changes span.
type MoveKind uint8

const (
	// MoveHold is make-before-break: the server loads and announces the
	// blocks of To it lacks while still serving From, then drops From \ To.
	// It needs memory for both spans (see HoldFits).
	MoveHold MoveKind = iota + 1
	// MoveDrain is for a server without memory for both spans: it first
	// drains and drops From \ To (keeping From ∩ To), then loads To \ From.
	// A step takes it only while other servers cover the blocks it drops.
	MoveDrain
)

// String names the kind for logs and scenario scripts.
func (k MoveKind) String() string {
	switch k {
	case MoveHold:
		return "hold"
	case MoveDrain:
		return "drain"
	}
	return fmt.Sprintf("move(%d)", uint8(k))
}

// Move is one server's span change.
type Move struct {
	// Server indexes Input.Servers.
	Server int
	// From is the span before the move and To the span after (either may
	// be empty: a server that joins, or one that stops serving).
	From, To swarm.Span
	// Kind says whether the server holds both spans or drains first.
	Kind MoveKind
	// LoadBytes is s_m |To \ From|: the weight bytes the move loads.
	LoadBytes int64
}

// Step is a set of moves that run in parallel. Each moving server first
// loads (MoveHold) or drops then loads (MoveDrain), and announces To; a
// MoveHold server drops From \ To only once every move of the step has
// announced its To (the step's barrier).
type Step struct {
	// Moves are the step's moves in increasing server index.
	Moves []Move
	// LoadBytes is the sum of the moves' LoadBytes.
	LoadBytes int64
}

// HoldFits reports whether server j has memory for the union of spans a and
// b plus holdSessions attention caches (s_c bytes each, the largest block's)
// per held block: s_m |a ∪ b| + holdSessions s_c |a ∪ b| <= M_j, the
// condition for a MoveHold from a to b.
func HoldFits(in Input, j int, a, b swarm.Span, holdSessions int) bool {
	n := int64(a.Len() + b.Len() - a.Intersect(b).Len())
	return n*(in.Model.BlockBytes+int64(holdSessions)*in.Model.CacheBytes) <= in.Servers[j].MemoryBytes
}

// Migrate returns a make-before-break migration from the spans current to
// the spans target (both indexed like in.Servers; empty: hosts nothing)
// that never uncovers a block current covers: the steps, the moves no safe
// order allows (blocked) and the spans after the steps (target, except
// that blocked servers keep an intermediate or current span). Replan calls
// it with the CG-BP target. Of opt it uses HoldSessions and SingleMove.
//
// A move is MoveHold when HoldFits, else MoveDrain. Each step must keep
// covered every block covered at its start:
//
//   - during its load phase, by a server that is not moving, by a MoveHold
//     server (which still holds From), or by a MoveDrain server in
//     From ∩ To;
//   - after it (every mover at To).
//
// A step starts from every pending move and removes, while a condition
// fails at some block, the lowest-priority mover that drops that block
// (during the load phase only MoveDrain movers drop). Priority: moves that
// cover a block nobody holds now first, then fewer bytes to load, then
// lower server index. When no move survives, every pending MoveHold whose
// From ∪ To is one span is split: a step grows the server to From ∪ To
// (it only loads, so it is always safe) and a later one drops From \ To;
// this lets a rotation of full servers go through one server with spare
// memory. With opt.SingleMove nothing is split (each server moves at most
// once, as a plan epoch of the planner group requires). When nothing can
// be split, the pending moves are blocked.
// Errors wrap ErrBadInput.
func Migrate(in Input, current, target []swarm.Span, opt ReplanOptions) ([]Step, []Move, []swarm.Span, error) {
	if err := in.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if opt.HoldSessions < 0 {
		return nil, nil, nil, fmt.Errorf("%w: hold sessions %d, want >= 0", ErrBadInput, opt.HoldSessions)
	}
	for _, arg := range []struct {
		name  string
		spans []swarm.Span
	}{{"current", current}, {"target", target}} {
		name, spans := arg.name, arg.spans
		if len(spans) != len(in.Servers) {
			return nil, nil, nil, fmt.Errorf("%w: %d %s spans, want one per server (%d)", ErrBadInput, len(spans), name, len(in.Servers))
		}
		for j, s := range spans {
			if s == (swarm.Span{}) {
				continue
			}
			if err := s.Validate(in.Model.Blocks); err != nil {
				return nil, nil, nil, fmt.Errorf("%w: %s[%d] (%s): %w", ErrBadInput, name, j, in.Servers[j].Name, err)
			}
		}
	}
	steps, blocked, final := schedule(in, current, target, opt)
	return steps, blocked, final, nil
}

// schedule is Migrate on validated input.
func schedule(in Input, cur, target []swarm.Span, opt ReplanOptions) ([]Step, []Move, []swarm.Span) {
	state := slices.Clone(cur)
	newMove := func(j int, from, to swarm.Span) Move {
		kind := MoveDrain
		if HoldFits(in, j, from, to, opt.HoldSessions) {
			kind = MoveHold
		}
		load := to.Len() - to.Intersect(from).Len()
		return Move{Server: j, From: from, To: to, Kind: kind, LoadBytes: int64(load) * in.Model.BlockBytes}
	}
	var pending []Move
	for j := range cur {
		if cur[j] == target[j] || (cur[j].Empty() && target[j].Empty()) {
			continue
		}
		pending = append(pending, newMove(j, cur[j], target[j]))
	}
	var steps []Step
	for len(pending) > 0 {
		fillsHole := func(m Move) bool {
			for b := m.To.Start; b < m.To.End; b++ {
				if !hosted(state, b) {
					return true
				}
			}
			return false
		}
		slices.SortStableFunc(pending, func(a, b Move) int {
			if ha, hb := fillsHole(a), fillsHole(b); ha != hb {
				if ha {
					return -1
				}
				return 1
			}
			return cmp.Or(cmp.Compare(a.LoadBytes, b.LoadBytes), cmp.Compare(a.Server, b.Server))
		})
		step := safeStep(in.Model.Blocks, state, pending)
		if len(step) == 0 {
			// split the MoveHolds whose union is one span: grow first
			for k, m := range pending {
				if opt.SingleMove {
					break
				}
				u := swarm.Span{Start: min(m.From.Start, m.To.Start), End: max(m.From.End, m.To.End)}
				apart := m.From.Intersect(m.To).Empty() && m.From.End != m.To.Start && m.To.End != m.From.Start
				if m.Kind != MoveHold || m.From.Empty() || apart || u == m.From {
					continue
				}
				step = append(step, newMove(m.Server, m.From, u))
				pending[k] = newMove(m.Server, u, m.To)
			}
			if len(step) == 0 {
				break
			}
		} else {
			pending = slices.DeleteFunc(pending, func(m Move) bool {
				return slices.ContainsFunc(step, func(s Move) bool { return s.Server == m.Server })
			})
		}
		var st Step
		for _, m := range step {
			st.LoadBytes += m.LoadBytes
			state[m.Server] = m.To
		}
		slices.SortFunc(step, func(a, b Move) int { return cmp.Compare(a.Server, b.Server) })
		st.Moves = step
		steps = append(steps, st)
	}
	slices.SortFunc(pending, func(a, b Move) int { return cmp.Compare(a.Server, b.Server) })
	return steps, pending, state
}

// safeStep returns the pending moves (in priority order) that the removal
// rule of schedule keeps; nil when none survives.
func safeStep(l int, state []swarm.Span, pending []Move) []Move {
	step := slices.Clone(pending)
	covered := make([]bool, l)
	for b := range covered {
		covered[b] = hosted(state, b)
	}
	moving := make([]int, len(state)) // index+1 into step, 0 = not moving
	holds := func(j, b int, phase int) bool {
		k := moving[j]
		if k == 0 {
			return state[j].Contains(b)
		}
		m := step[k-1]
		switch {
		case phase == 0 && m.Kind == MoveHold:
			return m.From.Contains(b)
		case phase == 0:
			return m.From.Contains(b) && m.To.Contains(b)
		}
		return m.To.Contains(b)
	}
	for len(step) > 0 {
		clear(moving)
		for k, m := range step {
			moving[m.Server] = k + 1
		}
		drop := -1 // index in step of the mover to remove
	search:
		for phase := range 2 {
			for b := range l {
				if !covered[b] {
					continue
				}
				ok := false
				for j := range state {
					if holds(j, b, phase) {
						ok = true
						break
					}
				}
				if ok {
					continue
				}
				// remove the lowest-priority mover that drops b in this phase
				for k := len(step) - 1; k >= 0; k-- {
					m := step[k]
					if m.From.Contains(b) && !m.To.Contains(b) && (phase == 1 || m.Kind == MoveDrain) {
						drop = k
						break search
					}
				}
			}
		}
		if drop < 0 {
			return step
		}
		step = slices.Delete(step, drop, drop+1)
	}
	return nil
}
