package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/swarm"
)

// PlanSource is where a server reads the committed plan and reports its
// moves: a planner.Client (a server that is not a replica), or its own
// replica (ReplicaSource).
type PlanSource interface {
	Current(ctx context.Context) (planner.Plan, error)
	Report(ctx context.Context, epoch uint64, p planner.Progress) error
}

// ReplicaSource is the PlanSource of a server that runs a planner replica
// itself: it reports as self.
type ReplicaSource struct {
	Replica *planner.Replica
	Self    string
}

// Current reads the committed plan (linearizable).
func (s ReplicaSource) Current(ctx context.Context) (planner.Plan, error) {
	return s.Replica.Current(ctx)
}

// Report records self's progress.
func (s ReplicaSource) Report(ctx context.Context, epoch uint64, p planner.Progress) error {
	return s.Replica.Report(ctx, epoch, s.Self, p)
}

// SpanMover moves a running server to another span, make-before-break
// where its memory allows (see the node's move mechanism); it returns once
// the new span is served and announced and the old one dropped.
type SpanMover interface {
	Move(ctx context.Context, to swarm.Span) error
}

// NextMove returns self's next move in plan p and its index among self's
// moves (planner.Progress.Move), and whether it may start now: the epoch is
// active, self has a move not yet done (a move reported started is taken
// again: its server stopped before finishing it), it did not fail, and
// every move of an earlier step is reported done (the step barrier of
// placement.Migrate). ok is false when self has nothing to do now.
func NextMove(p planner.Plan, self string) (m planner.Move, index int, ok bool) {
	if p.Epoch == 0 || p.Status != planner.StatusActive {
		return planner.Move{}, 0, false
	}
	done := func(i int) bool { // is move i of p.Moves reported done?
		k := 0 // its index among its server's moves
		for _, o := range p.Moves[:i] {
			if o.Server == p.Moves[i].Server {
				k++
			}
		}
		pr, ok := p.Progress[p.Moves[i].Server]
		return ok && (pr.Move > k || pr.Move == k && pr.State == planner.MoveDone)
	}
	k := -1
	for i, mv := range p.Moves {
		if mv.Server != self {
			continue
		}
		k++
		if done(i) {
			continue
		}
		if pr, ok := p.Progress[self]; ok && pr.State == planner.MoveFailed {
			return planner.Move{}, 0, false
		}
		for j, o := range p.Moves {
			if o.Step < mv.Step && !done(j) {
				return planner.Move{}, 0, false
			}
		}
		return mv, k, true
	}
	return planner.Move{}, 0, false
}

// ExecutePlans runs self's moves of the committed plans until ctx ends:
// every interval it reads the plan from src, and when NextMove gives a
// move it reports it started, moves with mover and reports it done (or
// failed, with the error). It returns ctx's error.
func ExecutePlans(ctx context.Context, src PlanSource, self string, mover SpanMover, interval time.Duration, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		p, err := src.Current(ctx)
		if err != nil && ctx.Err() == nil {
			log.Debug("plan: read the committed plan", "err", err)
		}
		if m, k, ok := NextMove(p, self); err == nil && ok {
			log.Info("plan: moving", "epoch", p.Epoch, "from", m.From.String(), "to", m.To.String(), "step", m.Step)
			report := func(pr planner.Progress) {
				pr.Move = k
				if err := src.Report(ctx, p.Epoch, pr); err != nil && ctx.Err() == nil {
					log.Warn("plan: report", "epoch", p.Epoch, "state", pr.State, "err", err)
				}
			}
			report(planner.Progress{State: planner.MoveStarted})
			if err := mover.Move(ctx, m.To); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				log.Warn("plan: move failed", "epoch", p.Epoch, "to", m.To.String(), "err", err)
				detail := err.Error()
				if len(detail) > planner.MaxDetailBytes {
					detail = detail[:planner.MaxDetailBytes]
				}
				report(planner.Progress{State: planner.MoveFailed, Detail: detail})
			} else {
				report(planner.Progress{State: planner.MoveDone})
			}
			continue // look again at once: a next move may be ready
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
