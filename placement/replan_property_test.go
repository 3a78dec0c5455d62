package placement_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// randomSpans gives each server a random span whose weights fit its memory
// (s_m per block), or nothing with probability 1/4.
func randomSpans(rng *rand.Rand, in placement.Input) []swarm.Span {
	out := make([]swarm.Span, len(in.Servers))
	for j, s := range in.Servers {
		fit := min(int(s.MemoryBytes/in.Model.BlockBytes), in.Model.Blocks)
		if fit == 0 || rng.IntN(4) == 0 {
			continue
		}
		m := 1 + rng.IntN(fit)
		a := rng.IntN(in.Model.Blocks - m + 1)
		out[j] = swarm.Span{Start: a, End: a + m}
	}
	return out
}

// coveredBy is the test's own coverage: block b is covered when some
// span in held(j) holds it.
func coveredBy(l int, n int, held func(j, b int) bool) []bool {
	out := make([]bool, l)
	for b := range out {
		for j := range n {
			if held(j, b) {
				out[b] = true
				break
			}
		}
	}
	return out
}

func inSpan(s swarm.Span, b int) bool { return b >= s.Start && b < s.End }

// checkMigration replays steps from cur and checks, with code independent
// of placement's: every move starts where the server is; no block covered
// at a step's start is uncovered during its load phase (a MoveHold server
// holds From, a MoveDrain one From ∩ To, the others their span) or after
// it; a MoveHold server has memory for From ∪ To plus hold caches per
// block and every span held fits; loaded bytes add up; the replay ends at
// final, which is target except for blocked servers. It returns the number
// of moves.
func checkMigration(t *testing.T, in placement.Input, cur, target []swarm.Span, steps []placement.Step,
	blocked []placement.Move, final []swarm.Span, hold int, what string) int {
	l, n := in.Model.Blocks, len(in.Servers)
	state := append([]swarm.Span(nil), cur...)
	moves := 0
	for k, st := range steps {
		require.NotEmpty(t, st.Moves, "%s step %d", what, k)
		mover := map[int]placement.Move{}
		var bytes int64
		for _, m := range st.Moves {
			require.Equal(t, state[m.Server], m.From, "%s step %d: server %d moves from where it is", what, k, m.Server)
			_, dup := mover[m.Server]
			require.False(t, dup, "%s step %d: server %d moves twice", what, k, m.Server)
			mover[m.Server] = m
			loaded := 0
			for b := m.To.Start; b < m.To.End; b++ {
				if !inSpan(m.From, b) {
					loaded++
				}
			}
			require.Equal(t, int64(loaded)*in.Model.BlockBytes, m.LoadBytes, "%s step %d", what, k)
			bytes += m.LoadBytes
			mem := in.Servers[m.Server].MemoryBytes
			union := 0
			for b := range l {
				if inSpan(m.From, b) || inSpan(m.To, b) {
					union++
				}
			}
			if m.Kind == placement.MoveHold {
				require.LessOrEqual(t, int64(union)*(in.Model.BlockBytes+int64(hold)*in.Model.CacheBytes), mem,
					"%s step %d: server %d holds both spans beyond its memory", what, k, m.Server)
			} else {
				require.Equal(t, placement.MoveDrain, m.Kind)
			}
			require.LessOrEqual(t, int64(m.To.Len())*in.Model.BlockBytes, mem, "%s step %d: target weights exceed memory", what, k)
			moves++
		}
		require.Equal(t, bytes, st.LoadBytes, "%s step %d", what, k)
		before := coveredBy(l, n, func(j, b int) bool { return inSpan(state[j], b) })
		during := coveredBy(l, n, func(j, b int) bool {
			m, ok := mover[j]
			switch {
			case !ok:
				return inSpan(state[j], b)
			case m.Kind == placement.MoveHold:
				return inSpan(m.From, b)
			}
			return inSpan(m.From, b) && inSpan(m.To, b)
		})
		for j, m := range mover {
			state[j] = m.To
		}
		after := coveredBy(l, n, func(j, b int) bool { return inSpan(state[j], b) })
		for b := range l {
			if before[b] {
				require.True(t, during[b], "%s step %d: block %d uncovered during the load phase", what, k, b)
				require.True(t, after[b], "%s step %d: block %d uncovered after the step", what, k, b)
			}
		}
	}
	require.Equal(t, state, final, "%s: replay ends at final", what)
	isBlocked := map[int]bool{}
	for _, m := range blocked {
		isBlocked[m.Server] = true
		require.Equal(t, final[m.Server], m.From, "%s: blocked server %d stays put", what, m.Server)
	}
	for j := range final {
		if !isBlocked[j] && !(final[j].Empty() && target[j].Empty()) {
			require.Equal(t, target[j], final[j], "%s: server %d ends at its target", what, j)
		}
	}
	return moves
}

// TestMigrateKeepsCoverage: on random fleets, current spans and targets
// (random spans, or CG-BP's plan), every step of Migrate keeps every block
// covered, never exceeds memory and ends at the target; when every mover
// can hold both spans and the target covers what current covers, all moves
// go in one step and none is blocked.
func TestMigrateKeepsCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	moves, blockedRuns, oneStep := 0, 0, 0
	for iter := range 1500 {
		in := randomFleet(rng, 12, 8, 2, iter%3 == 0)
		cur := randomSpans(rng, in)
		target := randomSpans(rng, in)
		if iter%2 == 0 {
			if p, err := placement.CGBP(in); err == nil {
				target = p.Spans
			}
		}
		hold := rng.IntN(3)
		single := rng.IntN(2) == 0
		steps, blocked, final, err := placement.Migrate(in, cur, target, placement.ReplanOptions{HoldSessions: hold, SingleMove: single})
		require.NoError(t, err, "iter %d", iter)
		what := fmt.Sprintf("iter %d", iter)
		moves += checkMigration(t, in, cur, target, steps, blocked, final, hold, what)
		if single {
			seen := map[int]bool{}
			for _, st := range steps {
				for _, m := range st.Moves {
					require.False(t, seen[m.Server], "%s: single move: server %d moves twice", what, m.Server)
					require.Equal(t, target[m.Server], m.To, what)
					seen[m.Server] = true
				}
			}
		}
		if len(blocked) > 0 {
			blockedRuns++
		}
		allHold, targetCovers := true, true
		for j := range cur {
			if cur[j] != target[j] && !(cur[j].Empty() && target[j].Empty()) &&
				!placement.HoldFits(in, j, cur[j], target[j], hold) {
				allHold = false
			}
		}
		for b := range in.Model.Blocks {
			c := coveredBy(in.Model.Blocks, len(cur), func(j, b int) bool { return inSpan(cur[j], b) })
			tc := coveredBy(in.Model.Blocks, len(target), func(j, b int) bool { return inSpan(target[j], b) })
			if c[b] && !tc[b] {
				targetCovers = false
			}
		}
		if allHold && targetCovers && len(steps) > 0 {
			require.Empty(t, blocked, "iter %d", iter)
			require.Len(t, steps, 1, "iter %d: every mover holds both spans: one step", iter)
			oneStep++
		}
	}
	t.Logf("%d moves checked; %d runs with blocked moves; %d one-step migrations", moves, blockedRuns, oneStep)
	require.Greater(t, moves, 3000)
	require.Greater(t, oneStep, 50)
}

// TestReplanProperties: on random live fleets (incremental CG-BP in a
// random join order, then random deaths), Replan's schedule passes
// checkMigration towards its target, the target is a CG-BP plan over the
// alive servers only, the total bytes add up, and SelfReplan lets exactly
// the servers of the first step move (no intents) — identically on a
// second call (determinism).
func TestReplanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 3))
	checked, applied := 0, 0
	for iter := range 600 {
		in := randomFleet(rng, 12, 8, 2, false)
		in.Order = rng.Perm(len(in.Servers))
		live, err := placement.Live(in)
		if err != nil && live.Spans == nil {
			continue
		}
		in.Order = nil
		alive := make([]bool, len(in.Servers))
		for j := range alive {
			alive[j] = rng.IntN(5) != 0
		}
		hold := rng.IntN(2)
		opt := placement.ReplanOptions{MinGain: 0.05 * rng.Float64(), HoldSessions: hold}
		r, err := placement.Replan(in, live.Spans, alive, opt)
		if err != nil {
			require.ErrorIs(t, err, placement.ErrInfeasible, "iter %d", iter)
			continue
		}
		cur := append([]swarm.Span(nil), live.Spans...)
		for j := range cur {
			if !alive[j] {
				cur[j] = swarm.Span{}
				require.True(t, r.Target.Spans[j].Empty(), "iter %d: dead server %d gets no target", iter, j)
			}
		}
		checkMigration(t, in, cur, r.Target.Spans, r.Steps, r.Blocked, r.Final, hold, "replan")
		if len(r.Blocked) == 0 {
			// Theorem 3.5: every client's route under CG-BP is within (17).
			ub, err := placement.UpperBound(aliveOnly(in, alive))
			require.NoError(t, err)
			require.InDelta(t, ub, r.Bound, 1e-12)
			require.LessOrEqual(t, r.FinalPerToken, ub+1e-12, "iter %d: (17)", iter)
		}
		var total int64
		for _, st := range r.Steps {
			total += st.LoadBytes
		}
		require.Equal(t, total, r.LoadBytes, "iter %d", iter)
		require.Equal(t, r.Apply, r.Reason == placement.ReasonUncovered || r.Reason == placement.ReasonBelowCapacity ||
			r.Reason == placement.ReasonGain, "iter %d: %s", iter, r.Reason)
		if r.Reason == placement.ReasonGain {
			require.Greater(t, r.Gain, opt.MinGain, "iter %d", iter)
		}
		first := map[int]bool{}
		if r.Apply {
			applied++
			for _, m := range r.Steps[0].Moves {
				first[m.Server] = true
			}
		}
		for me := range in.Servers {
			s, err := placement.SelfReplan(in, live.Spans, alive, opt, me, nil)
			require.NoError(t, err)
			require.Equal(t, first[me], s.Now, "iter %d server %d: %s", iter, me, s.Why)
			again, err := placement.SelfReplan(in, live.Spans, alive, opt, me, nil)
			require.NoError(t, err)
			require.Equal(t, s, again, "iter %d: deterministic", iter)
		}
		checked++
	}
	t.Logf("%d replannings checked, %d applied", checked, applied)
	require.Greater(t, checked, 200)
	require.Greater(t, applied, 50)
}

// aliveOnly returns in without the dead servers.
func aliveOnly(in placement.Input, alive []bool) placement.Input {
	out := in
	out.Servers = nil
	for j, s := range in.Servers {
		if alive[j] {
			out.Servers = append(out.Servers, s)
		}
	}
	return out
}

// FuzzMigrate runs the checks of TestMigrateKeepsCoverage on instances
// drawn from a fuzzed seed (go test -fuzz FuzzMigrate ./placement).
func FuzzMigrate(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 15, 99} {
		f.Add(seed, uint8(0))
	}
	f.Fuzz(func(t *testing.T, seed uint64, hold uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(hold)))
		in := randomFleet(rng, 10, 6, 2, seed%2 == 0)
		cur, target := randomSpans(rng, in), randomSpans(rng, in)
		if p, err := placement.CGBP(in); err == nil && seed%3 == 0 {
			target = p.Spans
		}
		steps, blocked, final, err := placement.Migrate(in, cur, target, placement.ReplanOptions{HoldSessions: int(hold % 4), SingleMove: seed%5 == 0})
		require.NoError(t, err)
		checkMigration(t, in, cur, target, steps, blocked, final, int(hold%4), "fuzz")
	})
}

// TestIdlePerTokenIsWSRR: IdlePerToken equals the per-token time of the
// route WS-RR (routing package, no open session) gives each client,
// averaged over sessions, on random CG-BP plans.
func TestIdlePerTokenIsWSRR(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 4))
	checked := 0
	for iter := range 400 {
		in := randomFleet(rng, 20, 10, 3, true)
		plan, err := placement.CGBP(in)
		if err != nil {
			continue
		}
		got, err := placement.IdlePerToken(in, plan.Spans)
		require.NoError(t, err)
		want := 0.0
		per := routeAll(t, in, plan)
		for c, v := range per {
			d := in.Sessions / len(in.Clients)
			if c < in.Sessions%len(in.Clients) {
				d++
			}
			want += float64(d) * v
		}
		want /= float64(in.Sessions)
		require.InDelta(t, want, got, 1e-9*max(1, want), "iter %d", iter)
		checked++
	}
	require.Greater(t, checked, 100)
	spans := make([]swarm.Span, 1)
	in := placement.Input{Model: placement.Model{Blocks: 2, BlockBytes: 1, CacheBytes: 1}, Sessions: 1,
		Clients: []string{"c"}, Servers: []placement.Server{{Name: "a", MemoryBytes: 10, Tau: 0.1, RTT: []float64{0.1}}}}
	v, err := placement.IdlePerToken(in, spans)
	require.NoError(t, err)
	require.True(t, math.IsInf(v, 1), "no server: no route")
}
