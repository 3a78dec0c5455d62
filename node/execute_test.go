package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/swarm"
)

// rotation is a plan of 3 moves in 3 steps, as placement.Migrate orders a
// swap of two servers' spans through a's spare memory: a grows 0:2 -> 0:4
// (step 0), b moves 2:4 -> 0:2 (step 1), a shrinks 0:4 -> 2:4 (step 2).
func rotation() planner.Plan {
	return planner.Plan{Epoch: 2, Status: planner.StatusActive,
		Assignment: map[string]swarm.Span{"a": span(2, 4), "b": span(0, 2)},
		Moves: []planner.Move{
			{Server: "a", From: span(0, 2), To: span(0, 4), Step: 0},
			{Server: "b", From: span(2, 4), To: span(0, 2), Step: 1},
			{Server: "a", From: span(0, 4), To: span(2, 4), Step: 2},
		}}
}

func TestNextMove(t *testing.T) {
	p := rotation()
	with := func(progress map[string]planner.Progress) planner.Plan {
		q := p
		q.Progress = progress
		return q
	}
	done := func(move int) planner.Progress { return planner.Progress{Move: move, State: planner.MoveDone} }
	for _, tc := range []struct {
		name  string
		plan  planner.Plan
		self  string
		want  planner.Move
		index int
		ok    bool
	}{
		{"a's first move starts", with(nil), "a", p.Moves[0], 0, true},
		{"b waits for step 0", with(nil), "b", planner.Move{}, 0, false},
		{"b after step 0", with(map[string]planner.Progress{"a": done(0)}), "b", p.Moves[1], 0, true},
		{"a's second waits for b", with(map[string]planner.Progress{"a": done(0)}), "a", planner.Move{}, 0, false},
		{"a's second after b", with(map[string]planner.Progress{"a": done(0), "b": done(0)}), "a", p.Moves[2], 1, true},
		{"a move reported started is taken again", with(map[string]planner.Progress{"a": {State: planner.MoveStarted}}), "a", p.Moves[0], 0, true},
		{"a failed server stops", with(map[string]planner.Progress{"a": {State: planner.MoveFailed}}), "a", planner.Move{}, 0, false},
		{"no move for c", with(nil), "c", planner.Move{}, 0, false},
		{"a done epoch", func() planner.Plan { q := with(nil); q.Status = planner.StatusDone; return q }(), "a", planner.Move{}, 0, false},
		{"an aborted epoch", func() planner.Plan { q := with(nil); q.Status = planner.StatusAborted; return q }(), "a", planner.Move{}, 0, false},
	} {
		m, k, ok := NextMove(tc.plan, tc.self)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.want, m, tc.name)
		require.Equal(t, tc.index, k, tc.name)
	}
}

// memSource is an in-memory PlanSource twin: reports update the plan's
// progress as the replicated state does (done when every server's last
// move is done).
type memSource struct {
	mu   sync.Mutex
	plan planner.Plan
	self string
}

func (s *memSource) Current(context.Context) (planner.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.plan
	q.Progress = map[string]planner.Progress{}
	for k, v := range s.plan.Progress {
		q.Progress[k] = v
	}
	return q, nil
}

func (s *memSource) Report(_ context.Context, epoch uint64, p planner.Progress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plan.Progress == nil {
		s.plan.Progress = map[string]planner.Progress{}
	}
	s.plan.Progress[s.self] = p
	return nil
}

type recordMover struct {
	moved chan swarm.Span
}

func (m recordMover) Move(_ context.Context, to swarm.Span) error {
	m.moved <- to
	return nil
}

// TestExecutePlans: server a runs its two moves in order once the other
// server's step is reported done, reporting each.
func TestExecutePlans(t *testing.T) {
	src := &memSource{plan: rotation(), self: "a"}
	mover := recordMover{moved: make(chan swarm.Span, 4)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ExecutePlans(ctx, src, "a", mover, 10*time.Millisecond, nil) }()
	require.Equal(t, span(0, 4), <-mover.moved, "a grows first")
	require.Eventually(t, func() bool {
		p, _ := src.Current(ctx)
		return p.Progress["a"] == planner.Progress{Move: 0, State: planner.MoveDone}
	}, 10*time.Second, 10*time.Millisecond)
	select {
	case to := <-mover.moved:
		t.Fatalf("a moved to %s before b's step was done", to)
	default:
	}
	src.mu.Lock()
	src.plan.Progress["b"] = planner.Progress{State: planner.MoveDone}
	src.mu.Unlock()
	require.Equal(t, span(2, 4), <-mover.moved, "then shrinks")
	require.Eventually(t, func() bool {
		p, _ := src.Current(ctx)
		return p.Progress["a"] == planner.Progress{Move: 1, State: planner.MoveDone}
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}
