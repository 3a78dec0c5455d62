package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// ReplanConfig configures the slow time scale of Alg. 2 of paper 003 on a
// live swarm: the planner group's leader replans the SERVING servers of one
// model from the registry and commits the migration as a plan epoch.
type ReplanConfig struct {
	// Model is the model replanned (empty: the registry's only model).
	Model string
	// Sessions and MaxLength are R and l^I_max + l_max; 0 takes what the
	// servers were placed with (LiveFleet).
	Sessions, MaxLength int
	// Options tune placement.Replan (MinGain, HoldSessions, SingleMove); a
	// MinGain of 0 means placement.DefaultMinGain.
	Options placement.ReplanOptions
	// Interval is how often the leader evaluates the fleet besides every
	// registry change (default DefaultReplanInterval).
	Interval time.Duration
	// EpochTimeout aborts an epoch that is still active this long after it
	// was committed (default DefaultEpochTimeout): a server that died mid-
	// move must not freeze replanning; the next epoch starts from the live
	// spans.
	EpochTimeout time.Duration
	// Quiet is how long no server may have been joining (JOIN without a
	// move of its own) before a plan applied only for its gain
	// (placement.ReasonGain) is proposed (default DefaultReplanQuiet): a
	// fleet still forming would be replanned once per joiner, and the
	// last joiners' incremental spans left in place when the remaining
	// gain falls under MinGain. Holes and blocks below capacity are
	// planned at once.
	Quiet time.Duration
}

// Defaults of ReplanConfig.
const (
	DefaultReplanInterval = 10 * time.Second
	DefaultEpochTimeout   = 5 * time.Minute
	DefaultReplanQuiet    = 5 * time.Second
)

// ErrNoChange is returned by NextPlan when the fleet needs no migration
// (placement.Replanning.Apply is false; its Reason says why).
var ErrNoChange = errors.New("node: no migration to apply")

// NextPlan is one evaluation of the leader: the live fleet of the entries
// (LiveFleet), placement.Replan over it (every SERVING server alive), and,
// when the migration is to be applied, the plan epoch that commits it: the
// assignment (node id -> final span) and the moves in their steps. It is
// pure; the Replanning is returned in every case for logs. Errors wrap
// ErrNoChange when there is nothing to apply, or are LiveFleet's and
// Replan's.
func NextPlan(entries []registry.Entry, epoch uint64, cfg ReplanConfig) (planner.Plan, placement.Replanning, error) {
	ff, err := LiveFleet(entries, cfg.Model, cfg.Sessions, cfg.MaxLength)
	if err != nil {
		return planner.Plan{}, placement.Replanning{}, err
	}
	fl, err := ff.Fleet()
	if err != nil {
		return planner.Plan{}, placement.Replanning{}, err
	}
	in := fl.Input
	in.Sessions = fl.TargetSessions
	rp, err := placement.Replan(in, fl.Spans, nil, cfg.Options)
	if err != nil {
		return planner.Plan{}, rp, err
	}
	if !rp.Apply {
		return planner.Plan{}, rp, fmt.Errorf("%w: %s", ErrNoChange, rp.Reason)
	}
	plan := planner.Plan{Epoch: epoch, ProposalID: proposalID(epoch), Assignment: map[string]swarm.Span{}}
	for j, s := range in.Servers {
		plan.Assignment[s.Name] = rp.Final[j]
	}
	for k, st := range rp.Steps {
		for _, m := range st.Moves {
			plan.Moves = append(plan.Moves, planner.Move{Server: in.Servers[m.Server].Name, From: m.From, To: m.To, Step: k})
		}
	}
	return plan, rp, nil
}

// proposalID is a fresh id for a proposal of epoch (retries of the same
// proposal reuse it; another proposer's differs).
func proposalID(epoch uint64) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%d-%s", epoch, hex.EncodeToString(b))
}

// settled reports whether the registry shows every mover of the done plan
// p at its assigned span (or no longer SERVING): until it does, replanning
// from it would see the old spans and move the same servers again.
func settled(p planner.Plan, entries []registry.Entry) bool {
	for _, m := range p.Moves {
		for _, e := range entries {
			if e.NodeID == m.Server && e.State == swarm.StateServing && e.Info.Span != p.Assignment[m.Server] {
				return false
			}
		}
	}
	return true
}

// ReplanLoop runs the leader's side of replanning on replica r until ctx
// ends: on every registry change and every Interval, if r leads the group,
// it aborts an epoch active for longer than EpochTimeout, and otherwise,
// when no epoch is active and the registry shows the last epoch's movers at
// their new spans (settled), proposes NextPlan as the next epoch (a plan
// for its gain alone only once no server has been joining for Quiet). Followers
// only watch. Errors of one evaluation are logged, not returned; it
// returns ctx's error.
func ReplanLoop(ctx context.Context, r *planner.Replica, self string, reg *registry.Registry, cfg ReplanConfig, log *slog.Logger) error {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultReplanInterval
	}
	if cfg.EpochTimeout <= 0 {
		cfg.EpochTimeout = DefaultEpochTimeout
	}
	if cfg.Options.MinGain == 0 {
		cfg.Options.MinGain = placement.DefaultMinGain
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	var activeSince time.Time
	var activeEpoch uint64
	if cfg.Quiet <= 0 {
		cfg.Quiet = DefaultReplanQuiet
	}
	var lastErr string     // the last evaluation error logged
	var lastJoin time.Time // when a server was last seen joining
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-reg.Changed():
		case <-tick.C:
		}
		if leader, ok := r.Leader(); !ok || leader.String() != self {
			continue
		}
		cur, err := r.Current(ctx)
		if err != nil {
			log.Warn("replan: read the current plan", "err", err)
			continue
		}
		if cur.Epoch > 0 && cur.Status == planner.StatusActive {
			if cur.Epoch != activeEpoch {
				activeEpoch, activeSince = cur.Epoch, time.Now()
			}
			if time.Since(activeSince) > cfg.EpochTimeout {
				reason := fmt.Sprintf("no completion within %v", cfg.EpochTimeout)
				if err := r.Abort(ctx, cur.Epoch, reason); err != nil {
					log.Warn("replan: abort", "epoch", cur.Epoch, "err", err)
				} else {
					log.Warn("replan: epoch aborted", "epoch", cur.Epoch, "reason", reason)
				}
			}
			continue
		}
		entries := reg.Snapshot()
		if joining(entries, cfg.Model) {
			lastJoin = time.Now()
		}
		if cur.Status == planner.StatusDone && !settled(cur, entries) {
			continue // the movers' new spans have not reached this registry replica yet
		}
		plan, rp, err := NextPlan(entries, cur.Epoch+1, cfg)
		if err == nil && rp.Reason == placement.ReasonGain && time.Since(lastJoin) < cfg.Quiet {
			continue // the fleet is still forming: plan its gain once it is complete
		}
		if err != nil {
			if !errors.Is(err, ErrNoChange) && err.Error() != lastErr {
				log.Warn("replan: evaluate", "err", err) // once per distinct error, not every round
			}
			lastErr = err.Error()
			continue
		}
		lastErr = ""
		if err := r.Propose(ctx, plan); err != nil {
			log.Warn("replan: propose", "epoch", plan.Epoch, "err", err)
			continue
		}
		log.Info("replan: epoch committed", "epoch", plan.Epoch, "reason", rp.Reason.String(), "moves", len(plan.Moves),
			"load_bytes", rp.LoadBytes, "per_token_s", rp.CurrentPerToken, "target_per_token_s", rp.FinalPerToken)
	}
}

// joining reports whether a block server of model (any, when empty) is
// joining the swarm: JOIN without a span move of its own (a server that
// drains before a move is JOIN too, with Draining).
func joining(entries []registry.Entry, model string) bool {
	for _, e := range entries {
		if e.State == swarm.StateJoin && e.Info.Draining.Empty() && !e.Info.FullRange && (model == "" || e.Info.Model == model) {
			return true
		}
	}
	return false
}
