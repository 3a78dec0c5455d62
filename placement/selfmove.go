package placement

import (
	"fmt"

	"github.com/swarmllm/swarm/swarm"
)

// Intent is a "moving" announcement a server published (in the registry)
// before changing span: it is loading or dropping the blocks of Blocks.
type Intent struct {
	// Server indexes Input.Servers.
	Server int
	// Blocks is the range of blocks the announced move changes.
	Blocks swarm.Span
}

// SelfMove is what one server should do according to SelfReplan.
type SelfMove struct {
	// Move is the server's first move in the plan (a server that grows
	// before it shrinks moves in two steps); Has is false when the plan
	// does not move it (or is not applied), and Move is then zero.
	Move Move
	Has  bool
	// Step is the index of Move's step in Replanning.Steps; -1 without one.
	Step int
	// Now reports whether the server may start Move now: the plan is
	// applied, Move is in its first step, and no other server announced an
	// Intent overlapping a block Move changes.
	Now bool
	// Why says in words why Now is what it is.
	Why string
	// Plan is the replanning every server computes from the same inputs.
	Plan Replanning
}

// SelfReplan is decentralized rebalancing (the fallback of issue 15 part
// 3, without a planner group): server me evaluates Replan for the whole
// fleet, as every server does on the same registry snapshot, and learns its
// own move and whether it may take it now. Replan is deterministic, so all
// servers agree on the plan; the intents of other servers (their announced
// moves) keep two servers from changing the same blocks at once when their
// snapshots differ. A server moves only in the first step of the plan:
// after that step the spans it changed are the next snapshot's current
// spans and the next step is again the first. Errors are Replan's, or wrap
// ErrBadInput for a bad me or intent.
func SelfReplan(in Input, current []swarm.Span, alive []bool, opt ReplanOptions, me int, intents []Intent) (SelfMove, error) {
	if me < 0 || me >= len(in.Servers) {
		return SelfMove{}, fmt.Errorf("%w: me = %d, want a server index in [0, %d)", ErrBadInput, me, len(in.Servers))
	}
	for i, it := range intents {
		if it.Server < 0 || it.Server >= len(in.Servers) {
			return SelfMove{}, fmt.Errorf("%w: intents[%d].server = %d, want an index in [0, %d)", ErrBadInput, i, it.Server, len(in.Servers))
		}
	}
	plan, err := Replan(in, current, alive, opt)
	if err != nil {
		return SelfMove{}, err
	}
	out := SelfMove{Step: -1, Plan: plan}
	if !plan.Apply {
		out.Why = "plan not applied: " + plan.Reason.String()
		return out, nil
	}
	for k := len(plan.Steps) - 1; k >= 0; k-- { // the first step moving me
		for _, m := range plan.Steps[k].Moves {
			if m.Server == me {
				out.Move, out.Has, out.Step = m, true, k
			}
		}
	}
	switch {
	case !out.Has:
		out.Why = "the plan does not move this server"
		return out, nil
	case out.Step > 0:
		out.Why = fmt.Sprintf("move is in step %d of the plan; the steps before it must finish first", out.Step+1)
		return out, nil
	}
	for _, it := range intents {
		if it.Server == me {
			continue
		}
		for b := it.Blocks.Start; b < it.Blocks.End; b++ {
			if out.Move.From.Contains(b) != out.Move.To.Contains(b) {
				out.Why = fmt.Sprintf("server %s announced a move over blocks %s", in.Servers[it.Server].Name, it.Blocks)
				return out, nil
			}
		}
	}
	out.Now, out.Why = true, "move is in the first step and no other server is moving these blocks"
	return out, nil
}
