package node

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// RebalanceConfig configures decentralized rebalancing, the fallback of
// live replanning when no planner group runs (issue 15 part 3): each
// server evaluates placement.SelfReplan on its own registry replica and
// takes only its own move.
type RebalanceConfig struct {
	// Model is the model rebalanced: the server's own.
	Model string
	// Interval is the mean time between evaluations besides those a
	// registry change triggers; each wait is drawn uniformly from
	// [Interval/2, 3 Interval/2). 0 disables rebalancing.
	Interval time.Duration
	// Jitter bounds the random delay between a registry change and the
	// evaluation it triggers (default DefaultRebalanceJitter): servers
	// that see the same hole evaluate at different moments, so the first
	// mover's intent (MovingTo in its entry) reaches the others before
	// they decide.
	Jitter time.Duration
	// Sessions and MaxLength are R and l^I_max + l_max (0: what the
	// servers advertise, LiveFleet).
	Sessions, MaxLength int
	// Options tune placement.Replan; a MinGain of 0 means
	// placement.DefaultMinGain.
	Options placement.ReplanOptions
	// Quiet is ReplanConfig.Quiet: a move for its gain alone waits until
	// no server has been joining for this long (default
	// DefaultReplanQuiet).
	Quiet time.Duration
}

// Defaults of RebalanceConfig.
const (
	DefaultRebalanceInterval = 60 * time.Second
	DefaultRebalanceJitter   = 2 * time.Second
)

// SelfPlan is one evaluation of decentralized rebalancing by server self
// (a registry node id): the live fleet of the entries (LiveFleet), the
// moves other servers announced as intents (an entry with MovingTo or
// Draining changes the blocks between its span and that one), and
// placement.SelfReplan for self. Beyond SelfReplan's rule (no overlapping
// intent), self does not move Now while any other server of the model
// shows a move in progress: one move at a time per model. Errors are
// LiveFleet's, SelfReplan's, or say that self is not a SERVING server of
// the fleet.
func SelfPlan(entries []registry.Entry, self string, cfg RebalanceConfig) (placement.SelfMove, error) {
	ff, err := LiveFleet(entries, cfg.Model, cfg.Sessions, cfg.MaxLength)
	if err != nil {
		return placement.SelfMove{}, err
	}
	fl, err := ff.Fleet()
	if err != nil {
		return placement.SelfMove{}, err
	}
	in := fl.Input
	in.Sessions = fl.TargetSessions
	index := map[string]int{}
	for j, s := range in.Servers {
		index[s.Name] = j
	}
	me, ok := index[self]
	if !ok {
		return placement.SelfMove{}, fmt.Errorf("node: server %s is not a SERVING server of the live fleet", self)
	}
	var intents []placement.Intent
	for _, e := range entries {
		j, ok := index[e.NodeID]
		if !ok || e.NodeID == self {
			continue
		}
		for _, other := range []swarm.Span{e.Info.MovingTo, e.Info.Draining} {
			if !other.Empty() {
				intents = append(intents, placement.Intent{Server: j, Blocks: hull(e.Info.Span, other)})
			}
		}
	}
	if cfg.Options.MinGain == 0 {
		cfg.Options.MinGain = placement.DefaultMinGain
	}
	sm, err := placement.SelfReplan(in, fl.Spans, nil, cfg.Options, me, intents)
	if err != nil || !sm.Now {
		return sm, err
	}
	// One move at a time per model: a snapshot taken while another server
	// moves is transient (a drain-first mover is not even in the fleet, so
	// its blocks look uncovered), and a plan made from it may be undone by
	// the next one.
	for _, e := range entries {
		if e.NodeID != self && e.Info.Model == cfg.Model && (!e.Info.MovingTo.Empty() || !e.Info.Draining.Empty()) &&
			(e.State == swarm.StateServing || e.State == swarm.StateJoin) {
			sm.Now = false
			sm.Why = fmt.Sprintf("server %s is moving (span %s, moving to %s, draining %s): waiting for it to finish", e.NodeID, e.Info.Span, e.Info.MovingTo, e.Info.Draining)
			break
		}
	}
	return sm, nil
}

// hull is the smallest span holding a and b.
func hull(a, b swarm.Span) swarm.Span {
	switch {
	case a.Empty():
		return b
	case b.Empty():
		return a
	}
	return swarm.Span{Start: min(a.Start, b.Start), End: max(a.End, b.End)}
}

// RebalanceLoop runs decentralized rebalancing for server self until ctx
// ends: every Interval (jittered) and, after the first of those, after
// every registry change (a random delay in [0, Jitter) later), it
// evaluates SelfPlan on the registry's snapshot and, when the plan moves
// self now, moves with mover (for the plan's gain alone only once no
// server has been joining for Quiet). Errors of
// one evaluation or move are logged (an evaluation error once per distinct
// message), not returned; it returns ctx's error. A zero Interval returns
// at once with nil.
func RebalanceLoop(ctx context.Context, self string, reg *registry.Registry, mover SpanMover, cfg RebalanceConfig, log *slog.Logger) error {
	if cfg.Interval <= 0 {
		return nil
	}
	if cfg.Jitter <= 0 {
		cfg.Jitter = DefaultRebalanceJitter
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	period := time.NewTimer(jittered(cfg.Interval))
	defer period.Stop()
	soon := time.NewTimer(time.Hour)
	soon.Stop()
	defer soon.Stop()
	pending := false // soon is armed
	warm := false    // the first period has passed
	if cfg.Quiet <= 0 {
		cfg.Quiet = DefaultReplanQuiet
	}
	var lastErr string
	var lastJoin time.Time // when a server was last seen joining
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-reg.Changed():
			if !warm {
				continue // the first evaluation waits a period: the registry of a new server is still filling
			}
			if !pending {
				soon.Reset(rand.N(cfg.Jitter))
				pending = true
			}
			continue
		case <-soon.C:
			pending = false
		case <-period.C:
			period.Reset(jittered(cfg.Interval))
			warm = true
		}
		entries := reg.Snapshot()
		if joining(entries, cfg.Model) {
			lastJoin = time.Now()
		}
		sm, err := SelfPlan(entries, self, cfg)
		if err != nil {
			if err.Error() != lastErr {
				log.Warn("rebalance: evaluate", "err", err)
			}
			lastErr = err.Error()
			continue
		}
		lastErr = ""
		if sm.Now && sm.Plan.Reason == placement.ReasonGain && time.Since(lastJoin) < cfg.Quiet {
			sm.Now, sm.Why = false, "a server is joining: the fleet is still forming"
		}
		if !sm.Now {
			if sm.Has {
				log.Debug("rebalance: not moving now", "why", sm.Why)
			}
			continue
		}
		log.Info("rebalance: moving", "from", sm.Move.From.String(), "to", sm.Move.To.String(),
			"reason", sm.Plan.Reason.String(), "per_token_s", sm.Plan.CurrentPerToken, "target_per_token_s", sm.Plan.FinalPerToken)
		if err := mover.Move(ctx, sm.Move.To); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Warn("rebalance: move failed", "to", sm.Move.To.String(), "err", err)
		}
	}
}

// jittered draws a wait uniformly from [d/2, 3d/2).
func jittered(d time.Duration) time.Duration {
	return d/2 + rand.N(d)
}
