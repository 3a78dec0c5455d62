package planner

import (
	"bytes"
	"strings"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// plan1 moves server b from 0:4 to 4:8 after a joins 0:4 (step 0, then 1).
func plan1() Plan {
	return Plan{
		Epoch:      1,
		ProposalID: "p1",
		Assignment: map[string]swarm.Span{"a": {Start: 0, End: 4}, "b": {Start: 4, End: 8}},
		Moves: []Move{
			{Server: "a", From: swarm.Span{}, To: swarm.Span{Start: 0, End: 4}, Step: 0},
			{Server: "b", From: swarm.Span{Start: 0, End: 4}, To: swarm.Span{Start: 4, End: 8}, Step: 1},
		},
	}
}

func proposeCmd(p Plan) command { return command{Op: opPropose, Plan: &p} }

func progressCmd(epoch uint64, server string, st MoveState) command {
	return command{Op: opProgress, Epoch: epoch, Server: server, Progress: &Progress{State: st}}
}

func abortCmd(epoch uint64) command {
	return command{Op: opAbort, Epoch: epoch, Reason: "leader changed"}
}

// TestStateTransitions runs scripted command sequences through the
// encoding and the state machine's Update, checking each outcome.
func TestStateTransitions(t *testing.T) {
	epoch2 := plan1()
	epoch2.Epoch, epoch2.ProposalID = 2, "p2"
	otherEpoch1 := plan1()
	otherEpoch1.ProposalID = "p1-bis"
	noMoves := plan1()
	noMoves.Moves = nil

	type step struct {
		cmd  command
		want error // nil: applied
	}
	tests := []struct {
		name   string
		steps  []step
		status Status
		epoch  uint64
	}{
		{"first epoch must be 1", []step{{proposeCmd(epoch2), ErrWrongEpoch}}, "", 0},
		{"epoch 1 commits active", []step{{proposeCmd(plan1()), nil}}, StatusActive, 1},
		{"retry of the committed proposal is accepted", []step{{proposeCmd(plan1()), nil}, {proposeCmd(plan1()), nil}}, StatusActive, 1},
		{"second plan for epoch 1 refused", []step{{proposeCmd(plan1()), nil}, {proposeCmd(otherEpoch1), ErrWrongEpoch}}, StatusActive, 1},
		{"epoch 2 refused while 1 is active", []step{{proposeCmd(plan1()), nil}, {proposeCmd(epoch2), ErrEpochActive}}, StatusActive, 1},
		{"all moves done closes the epoch", []step{
			{proposeCmd(plan1()), nil},
			{progressCmd(1, "a", MoveStarted), nil},
			{progressCmd(1, "a", MoveDone), nil},
			{progressCmd(1, "b", MoveDone), nil},
		}, StatusDone, 1},
		{"epoch 2 after 1 is done", []step{
			{proposeCmd(plan1()), nil},
			{progressCmd(1, "a", MoveDone), nil},
			{progressCmd(1, "b", MoveDone), nil},
			{proposeCmd(epoch2), nil},
		}, StatusActive, 2},
		{"abort then epoch 2", []step{{proposeCmd(plan1()), nil}, {abortCmd(1), nil}, {abortCmd(1), nil}, {proposeCmd(epoch2), nil}}, StatusActive, 2},
		{"abort of a done epoch refused", []step{{proposeCmd(noMoves), nil}, {abortCmd(1), ErrEpochClosed}}, StatusDone, 1},
		{"abort of an unknown epoch", []step{{abortCmd(1), ErrUnknownEpoch}}, "", 0},
		{"progress for an unknown epoch", []step{{proposeCmd(plan1()), nil}, {progressCmd(2, "a", MoveDone), ErrUnknownEpoch}}, StatusActive, 1},
		{"progress for a stale epoch", []step{
			{proposeCmd(plan1()), nil}, {abortCmd(1), nil}, {proposeCmd(epoch2), nil},
			{progressCmd(1, "a", MoveDone), ErrStaleEpoch},
		}, StatusActive, 2},
		{"progress from a server without a move", []step{{proposeCmd(plan1()), nil}, {progressCmd(1, "c", MoveDone), ErrUnknownServer}}, StatusActive, 1},
		{"progress after the server finished", []step{
			{proposeCmd(plan1()), nil}, {progressCmd(1, "a", MoveFailed), nil}, {progressCmd(1, "a", MoveDone), ErrEpochClosed},
		}, StatusActive, 1},
		{"repeated report is a retry", []step{{proposeCmd(plan1()), nil}, {progressCmd(1, "a", MoveDone), nil}, {progressCmd(1, "a", MoveDone), nil}}, StatusActive, 1},
		{"progress after abort refused", []step{{proposeCmd(plan1()), nil}, {abortCmd(1), nil}, {progressCmd(1, "a", MoveDone), ErrEpochClosed}}, StatusAborted, 1},
		{"unknown move state", []step{{proposeCmd(plan1()), nil}, {progressCmd(1, "a", "halfway"), ErrBadCommand}}, StatusActive, 1},
		{"a plan with no moves is done at once", []step{{proposeCmd(noMoves), nil}}, StatusDone, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fsm{changed: func(State) {}}
			for i, st := range tt.steps {
				res, err := f.Update(entry(st.cmd.encode()))
				require.NoError(t, err, "step %d", i)
				if st.want == nil {
					require.NoError(t, resultError(res), "step %d", i)
				} else {
					require.ErrorIs(t, resultError(res), st.want, "step %d", i)
				}
			}
			require.Equal(t, tt.epoch, f.state.Plan.Epoch)
			require.Equal(t, tt.status, f.state.Plan.Status)
		})
	}
}

// TestGrowThenShrink: a server may move twice in one epoch when its moves
// chain in increasing steps (placement.Migrate's grow-then-shrink); it
// reports each move, in order, and the epoch is done after its last; a
// server assigned no span (it stops serving) is a valid plan.
func TestGrowThenShrink(t *testing.T) {
	p := Plan{Epoch: 1, ProposalID: "p", Assignment: map[string]swarm.Span{"a": {Start: 2, End: 4}, "b": {}},
		Moves: []Move{
			{Server: "a", From: swarm.Span{Start: 0, End: 2}, To: swarm.Span{Start: 0, End: 4}, Step: 0},
			{Server: "b", From: swarm.Span{Start: 0, End: 2}, To: swarm.Span{}, Step: 1},
			{Server: "a", From: swarm.Span{Start: 0, End: 4}, To: swarm.Span{Start: 2, End: 4}, Step: 2},
		}}
	var s State
	require.NoError(t, s.applyPropose(p))
	require.NoError(t, s.applyProgress(1, "a", Progress{State: MoveDone}))
	require.ErrorIs(t, s.applyProgress(1, "a", Progress{State: MoveStarted}), ErrEpochClosed, "move 0 is done")
	require.ErrorIs(t, s.applyProgress(1, "a", Progress{Move: 2, State: MoveDone}), ErrBadCommand, "a has 2 moves")
	require.NoError(t, s.applyProgress(1, "b", Progress{State: MoveDone}))
	require.Equal(t, StatusActive, s.Plan.Status, "a's second move is not done")
	require.NoError(t, s.applyProgress(1, "a", Progress{Move: 1, State: MoveStarted}))
	require.NoError(t, s.applyProgress(1, "a", Progress{Move: 1, State: MoveDone}))
	require.Equal(t, StatusDone, s.Plan.Status)
}

// TestBadPlans checks that malformed plans are refused, naming the fault.
func TestBadPlans(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Plan)
		says   string
	}{
		{"no proposal id", func(p *Plan) { p.ProposalID = "" }, "proposal id"},
		{"empty assignment", func(p *Plan) { p.Assignment, p.Moves = nil, nil }, "assigns no server"},
		{"empty span", func(p *Plan) { p.Assignment["a"] = swarm.Span{Start: 3, End: 3} }, "server a"},
		{"move of an unassigned server", func(p *Plan) { p.Moves[0].Server = "z" }, `server "z" is not in the assignment`},
		{"move to another span", func(p *Plan) { p.Moves[0].To = swarm.Span{Start: 0, End: 2} }, "server a's last move ends at 0:2 but it is assigned 0:4"},
		{"steps decrease", func(p *Plan) { p.Moves[0].Step = 2 }, "step 1 after step 2"},
		{"moves of a server do not chain", func(p *Plan) {
			p.Moves[0].To = swarm.Span{Start: 0, End: 6}
			p.Moves[1] = Move{Server: "a", From: swarm.Span{Start: 0, End: 5}, To: p.Assignment["a"], Step: 1}
		}, "server a moves from 0:5, but its previous move ended at 0:6"},
		{"a server moves twice in one step", func(p *Plan) {
			p.Moves[0].To = swarm.Span{Start: 0, End: 6}
			p.Moves[1] = Move{Server: "a", From: swarm.Span{Start: 0, End: 6}, To: p.Assignment["a"], Step: 0}
		}, "server a moves twice in step 0"},
		{"bad target span", func(p *Plan) { p.Moves[0].To = swarm.Span{Start: 5, End: 2}; p.Assignment["a"] = p.Moves[0].To }, "server a"},
		{"move to itself", func(p *Plan) { p.Moves[0].From = p.Moves[0].To }, "to itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan1()
			p.Assignment = map[string]swarm.Span{"a": {Start: 0, End: 4}, "b": {Start: 4, End: 8}}
			tt.change(&p)
			err := validatePlan(p)
			require.ErrorIs(t, err, ErrBadCommand)
			require.ErrorContains(t, err, tt.says)
		})
	}
}

// TestDecodeCommand checks the command encoding's guards.
func TestDecodeCommand(t *testing.T) {
	tests := []struct{ in, says string }{
		{`not json`, "invalid character"},
		{`{"v":2,"op":"abort","epoch":1}`, "command version 2"},
		{`{"v":1,"op":"rollback","epoch":1}`, `operation "rollback"`},
		{`{"v":1,"op":"abort","epoch":1,"extra":true}`, `unknown field "extra"`},
		{`{"v":1,"op":"propose"}`, "propose without a plan"},
		{`{"v":1,"op":"progress","epoch":1}`, "progress needs a server"},
	}
	for _, tt := range tests {
		_, err := decodeCommand([]byte(tt.in))
		require.ErrorIs(t, err, ErrBadCommand, tt.in)
		require.ErrorContains(t, err, tt.says, tt.in)
	}
	c, err := decodeCommand([]byte(`{"v":1,"op":"progress","epoch":3,"server":"s","progress":{"state":"done"}}`))
	require.NoError(t, err)
	want := progressCmd(3, "s", MoveDone)
	want.V = 1
	require.Equal(t, want, c)
}

// TestRejectionKeepsSentinel checks that a refusal keeps its sentinel and
// message across the Raft result.
func TestRejectionKeepsSentinel(t *testing.T) {
	f := &fsm{changed: func(State) {}}
	res, err := f.Update(entry(abortCmd(4).encode()))
	require.NoError(t, err)
	got := resultError(res)
	require.ErrorIs(t, got, ErrUnknownEpoch)
	require.EqualError(t, got, "planner: unknown epoch: abort of epoch 4, current epoch is 0")
}

// TestSnapshotRoundTrip saves a state mid-epoch and recovers it into an
// empty state machine, which then goes on exactly as the original.
func TestSnapshotRoundTrip(t *testing.T) {
	var seen []State
	src := &fsm{changed: func(State) {}}
	for _, c := range []command{proposeCmd(plan1()), progressCmd(1, "a", MoveDone)} {
		res, err := src.Update(entry(c.encode()))
		require.NoError(t, err)
		require.NoError(t, resultError(res))
	}
	var buf bytes.Buffer
	require.NoError(t, src.SaveSnapshot(&buf, nil, nil))
	require.Contains(t, buf.String(), `"v":1`)

	dst := &fsm{changed: func(s State) { seen = append(seen, s) }}
	require.NoError(t, dst.RecoverFromSnapshot(bytes.NewReader(buf.Bytes()), nil, nil))
	require.Len(t, seen, 1)
	want := plan1()
	want.Status = StatusActive
	want.Progress = map[string]Progress{"a": {State: MoveDone}}
	require.Equal(t, want, seen[0].Plan)

	res, err := dst.Update(entry(progressCmd(1, "b", MoveDone).encode()))
	require.NoError(t, err)
	require.NoError(t, resultError(res))
	require.Equal(t, StatusDone, dst.state.Plan.Status)

	_, err = readSnapshot(strings.NewReader(`{"v":7,"state":{}}`))
	require.ErrorContains(t, err, "snapshot version 7")
	_, err = readSnapshot(strings.NewReader(`{"v":1,"state":{"plan":{"epoch":"x"}}}`))
	require.ErrorContains(t, err, "read snapshot")
}

func entry(cmd []byte) sm.Entry { return sm.Entry{Index: 1, Cmd: cmd} }
