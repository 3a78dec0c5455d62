package planner

import (
	"fmt"
	"maps"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// Status is the lifecycle of a plan epoch.
type Status string

// Epoch statuses. An epoch is Active from its commit until every server with
// a move reports MoveDone (then Done) or until it is aborted (Aborted).
const (
	StatusActive  Status = "active"
	StatusDone    Status = "done"
	StatusAborted Status = "aborted"
)

// MoveState is what a server reports about its own move in an epoch.
type MoveState string

// Move states a server reports. MoveDone and MoveFailed are final for the
// epoch: a server cannot report again after either.
const (
	// MoveStarted: the server is loading its new span (make-before-break:
	// it still serves the old one).
	MoveStarted MoveState = "started"
	// MoveDone: the server serves its target span and dropped the blocks
	// it no longer needs.
	MoveDone MoveState = "done"
	// MoveFailed: the server could not take its target span; it keeps
	// serving its old span.
	MoveFailed MoveState = "failed"
)

// Move is one server's span change in a plan epoch.
type Move struct {
	// Server is the server's node id (its libp2p peer id string).
	Server string `json:"server"`
	// From is the span the server holds when the plan is made; the zero
	// span (0:0) for a server that holds none yet.
	From swarm.Span `json:"from"`
	// To is the span the move ends with; a server's last move ends at
	// Plan.Assignment[Server]. A server may move more than once in an
	// epoch (grow then shrink, so that a rotation passes through its spare
	// memory: placement.Migrate); its moves chain, each From the previous
	// To, in increasing steps.
	To swarm.Span `json:"to"`
	// Step orders the moves: every move of step k must be done before a
	// move of step k+1 starts; moves of one step may run together. Steps
	// start at 0 and never decrease along Plan.Moves.
	Step int `json:"step"`
}

// Progress is the last report of one server in the current epoch.
type Progress struct {
	// Move is which of the server's moves the report is about: 0 for its
	// first (and, usually, only) move in Plan.Moves, 1 for its second...
	Move int `json:"move,omitempty"`
	// State is the server's move state.
	State MoveState `json:"state"`
	// Detail is a free-form note from the server (the error for
	// MoveFailed); at most MaxDetailBytes bytes.
	Detail string `json:"detail,omitempty"`
}

// Plan is one committed plan epoch: the target assignment, the moves that
// reach it in order, and the servers' progress.
type Plan struct {
	// Epoch numbers the plans from 1; each commits exactly once.
	Epoch uint64 `json:"epoch"`
	// ProposalID identifies the proposal that committed this epoch; a
	// retried proposal with the same id is accepted as the same plan.
	ProposalID string `json:"proposal_id"`
	// Assignment maps every server id in the plan to its target span
	// (0-based, half-open block indices).
	Assignment map[string]swarm.Span `json:"assignment"`
	// Moves lists the span changes in execution order (see Move.Step).
	Moves []Move `json:"moves"`
	// Status is the epoch's lifecycle state.
	Status Status `json:"status"`
	// Progress maps a server id of Moves to its last report; servers that
	// have not reported yet are absent.
	Progress map[string]Progress `json:"progress,omitempty"`
	// AbortReason says why an Aborted epoch was stopped.
	AbortReason string `json:"abort_reason,omitempty"`
}

// Clone returns a deep copy of p.
func (p Plan) Clone() Plan {
	p.Assignment = maps.Clone(p.Assignment)
	p.Moves = slices.Clone(p.Moves)
	p.Progress = maps.Clone(p.Progress)
	return p
}

// State is the replicated state: the current (latest committed) plan
// epoch. Plan.Epoch is 0 before the first plan commits.
type State struct {
	Plan Plan `json:"plan"`
}

// Clone returns a deep copy of s.
func (s State) Clone() State { return State{Plan: s.Plan.Clone()} }

// MaxDetailBytes bounds Progress.Detail and an abort reason, in bytes.
const MaxDetailBytes = 1024

// validatePlan checks a proposed plan's shape (not its epoch number).
func validatePlan(p Plan) error {
	if p.ProposalID == "" {
		return fmt.Errorf("%w: empty proposal id (want a unique string per proposal)", ErrBadCommand)
	}
	if len(p.Assignment) == 0 {
		return fmt.Errorf("%w: epoch %d assigns no server (want at least one server id -> span)", ErrBadCommand, p.Epoch)
	}
	for id, s := range p.Assignment {
		if id == "" {
			return fmt.Errorf("%w: epoch %d assigns a span to an empty server id", ErrBadCommand, p.Epoch)
		}
		if s == (swarm.Span{}) {
			continue // the server stops serving (its blocks went elsewhere)
		}
		if err := s.Validate(0); err != nil {
			return fmt.Errorf("%w: epoch %d server %s: %w", ErrBadCommand, p.Epoch, id, err)
		}
	}
	last := make(map[string]Move, len(p.Moves)) // each server's latest move so far
	step := 0
	for i, m := range p.Moves {
		_, ok := p.Assignment[m.Server]
		prev, moved := last[m.Server]
		switch {
		case !ok:
			return fmt.Errorf("%w: epoch %d move %d: server %q is not in the assignment", ErrBadCommand, p.Epoch, i, m.Server)
		case moved && m.From != prev.To:
			return fmt.Errorf("%w: epoch %d move %d: server %s moves from %s, but its previous move ended at %s", ErrBadCommand, p.Epoch, i, m.Server, m.From, prev.To)
		case moved && m.Step <= prev.Step:
			return fmt.Errorf("%w: epoch %d move %d: server %s moves twice in step %d (want its moves in increasing steps)", ErrBadCommand, p.Epoch, i, m.Server, m.Step)
		case m.From == m.To:
			return fmt.Errorf("%w: epoch %d move %d: server %s moves from %s to itself", ErrBadCommand, p.Epoch, i, m.Server, m.From)
		case m.From != (swarm.Span{}) && m.From.Validate(0) != nil:
			return fmt.Errorf("%w: epoch %d move %d: server %s: from: %w", ErrBadCommand, p.Epoch, i, m.Server, m.From.Validate(0))
		case m.To != (swarm.Span{}) && m.To.Validate(0) != nil:
			return fmt.Errorf("%w: epoch %d move %d: server %s: to: %w", ErrBadCommand, p.Epoch, i, m.Server, m.To.Validate(0))
		case m.Step < step:
			return fmt.Errorf("%w: epoch %d move %d: step %d after step %d (want non-decreasing steps from 0)", ErrBadCommand, p.Epoch, i, m.Step, step)
		}
		last[m.Server] = m
		step = m.Step
	}
	for id, m := range last {
		if target := p.Assignment[id]; m.To != target {
			return fmt.Errorf("%w: epoch %d: server %s's last move ends at %s but it is assigned %s", ErrBadCommand, p.Epoch, id, m.To, target)
		}
	}
	return nil
}

// applyPropose commits plan as the next epoch. A plan whose ProposalID
// equals the current one's is a retry and changes nothing.
func (s *State) applyPropose(p Plan) error {
	cur := s.Plan
	if cur.Epoch > 0 && p.Epoch == cur.Epoch && p.ProposalID == cur.ProposalID {
		return nil // a retried proposal that already committed
	}
	if p.Epoch != cur.Epoch+1 {
		return fmt.Errorf("%w: proposed epoch %d, current epoch is %d (want %d)", ErrWrongEpoch, p.Epoch, cur.Epoch, cur.Epoch+1)
	}
	if cur.Epoch > 0 && cur.Status == StatusActive {
		return fmt.Errorf("%w: epoch %d is still active; abort it before proposing epoch %d", ErrEpochActive, cur.Epoch, p.Epoch)
	}
	if err := validatePlan(p); err != nil {
		return err
	}
	p = p.Clone()
	p.Status, p.Progress, p.AbortReason = StatusActive, nil, ""
	if len(p.Moves) == 0 {
		p.Status = StatusDone // nothing to move: the fleet already matches
	}
	s.Plan = p
	return nil
}

// applyProgress records a server's report for the current epoch.
func (s *State) applyProgress(epoch uint64, server string, pr Progress) error {
	cur := &s.Plan
	switch {
	case epoch == 0 || epoch > cur.Epoch:
		return fmt.Errorf("%w: progress for epoch %d, current epoch is %d", ErrUnknownEpoch, epoch, cur.Epoch)
	case epoch < cur.Epoch:
		return fmt.Errorf("%w: progress for epoch %d, current epoch is %d", ErrStaleEpoch, epoch, cur.Epoch)
	case cur.moveCount(server) == 0:
		return fmt.Errorf("%w: server %q has no move in epoch %d", ErrUnknownServer, server, epoch)
	case pr.Move < 0 || pr.Move >= cur.moveCount(server):
		return fmt.Errorf("%w: server %s reports its move %d, it has %d in epoch %d", ErrBadCommand, server, pr.Move, cur.moveCount(server), epoch)
	case pr.State != MoveStarted && pr.State != MoveDone && pr.State != MoveFailed:
		return fmt.Errorf("%w: move state %q (want %s, %s or %s)", ErrBadCommand, pr.State, MoveStarted, MoveDone, MoveFailed)
	case len(pr.Detail) > MaxDetailBytes:
		return fmt.Errorf("%w: progress detail of %d bytes (at most %d)", ErrBadCommand, len(pr.Detail), MaxDetailBytes)
	}
	last, reported := cur.Progress[server]
	if reported && last == pr {
		return nil // a retried report
	}
	if cur.Status != StatusActive {
		return fmt.Errorf("%w: epoch %d is %s", ErrEpochClosed, epoch, cur.Status)
	}
	if reported {
		switch {
		case last.State == MoveFailed:
			return fmt.Errorf("%w: server %s already reported %s in epoch %d", ErrEpochClosed, server, last.State, epoch)
		case pr.Move < last.Move, pr.Move == last.Move && last.State != MoveStarted:
			return fmt.Errorf("%w: server %s already reported move %d %s in epoch %d", ErrEpochClosed, server, last.Move, last.State, epoch)
		case pr.Move > last.Move && last.State != MoveDone:
			return fmt.Errorf("%w: server %s reports move %d before move %d is done", ErrBadCommand, server, pr.Move, last.Move)
		}
	}
	if cur.Progress == nil {
		cur.Progress = map[string]Progress{}
	}
	cur.Progress[server] = pr
	for _, m := range cur.Moves {
		if p := cur.Progress[m.Server]; p.State != MoveDone || p.Move != cur.moveCount(m.Server)-1 {
			return nil
		}
	}
	cur.Status = StatusDone
	return nil
}

// moveCount is the number of moves server has in the plan.
func (p Plan) moveCount(server string) int {
	n := 0
	for _, m := range p.Moves {
		if m.Server == server {
			n++
		}
	}
	return n
}

// applyAbort stops the current epoch: servers finish the move they are in
// (make-before-break keeps every block covered) and start no other; the
// next epoch is planned from the live spans.
func (s *State) applyAbort(epoch uint64, reason string) error {
	cur := &s.Plan
	switch {
	case len(reason) > MaxDetailBytes:
		return fmt.Errorf("%w: abort reason of %d bytes (at most %d)", ErrBadCommand, len(reason), MaxDetailBytes)
	case epoch == 0 || epoch > cur.Epoch:
		return fmt.Errorf("%w: abort of epoch %d, current epoch is %d", ErrUnknownEpoch, epoch, cur.Epoch)
	case epoch < cur.Epoch:
		return fmt.Errorf("%w: abort of epoch %d, current epoch is %d", ErrStaleEpoch, epoch, cur.Epoch)
	case cur.Status == StatusAborted:
		return nil // a retried abort
	case cur.Status != StatusActive:
		return fmt.Errorf("%w: epoch %d is %s", ErrEpochClosed, epoch, cur.Status)
	}
	cur.Status, cur.AbortReason = StatusAborted, reason
	return nil
}
