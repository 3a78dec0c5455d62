package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// twoServerInfo is a server of a 4-block model with s_m = 100 bytes and
// s_c = 1 byte per token x 10 tokens = 10 bytes, placed with R = 1: memory
// for exactly 2 blocks and their caches (2 x 110 = 220 bytes; cache
// capacity 220 - 2 x 100 = 20).
func twoServerInfo(s swarm.Span) swarm.ServerInfo {
	return swarm.ServerInfo{Model: "m", ModelBlocks: 4, Span: s, MemoryBytes: 220, CacheBytesCapacity: 20, CacheBytesPerToken: 1,
		Tau: 0.01, ClientRTT: 0.01, PlacementSessions: 1, PlacementMaxLength: 10}
}

// TestNextPlan: two servers with memory for 2 of the 4 blocks both hold
// 0:2, so 2:4 is uncovered: the plan keeps a (first by id) on 0:2 and moves
// b to 2:4 in one step, as worked out by hand (CG-BP gives each server 2
// blocks; b cannot hold 0:4, so it drains, which a's copy of 0:2 allows).
// Once b serves 2:4 there is nothing to change.
func TestNextPlan(t *testing.T) {
	entries := []registry.Entry{
		{NodeID: "b", State: swarm.StateServing, Info: twoServerInfo(span(0, 2))},
		{NodeID: "a", State: swarm.StateServing, Info: twoServerInfo(span(0, 2))},
	}
	plan, rp, err := NextPlan(entries, 3, ReplanConfig{})
	require.NoError(t, err)
	require.Equal(t, "uncovered", rp.Reason.String())
	require.Equal(t, uint64(3), plan.Epoch)
	require.NotEmpty(t, plan.ProposalID)
	require.Equal(t, map[string]swarm.Span{"a": span(0, 2), "b": span(2, 4)}, plan.Assignment)
	require.Equal(t, []planner.Move{{Server: "b", From: span(0, 2), To: span(2, 4), Step: 0}}, plan.Moves)
	require.Equal(t, int64(200), rp.LoadBytes, "b loads two blocks of 100 bytes")

	entries[0].Info = twoServerInfo(span(2, 4))
	_, rp, err = NextPlan(entries, 4, ReplanConfig{})
	require.ErrorIs(t, err, ErrNoChange)
	require.Equal(t, "at-target", rp.Reason.String())
}

// TestReplanLoop: three planner replicas on loopback libp2p hosts, each
// running ReplanLoop over its registry replica; two servers' entries leave
// block 2:4 uncovered. Exactly one epoch is committed, by the leader, with
// the move of TestNextPlan; the servers read it over PlanProtocol, a server
// without a move cannot report one, and after the mover reports it done
// and its entry shows the new span, no further epoch comes (the fleet is
// at its target).
func TestReplanLoop(t *testing.T) {
	boot := joinMember(t, registrytest.P2PConfig(nil))
	members := []*member{boot, joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node))}
	a, b := joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node))
	ids := make([]peer.ID, len(members))
	for i, m := range members {
		ids[i] = m.node.ID()
	}
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	replicas := make([]*planner.Replica, len(members))
	loops := make(chan error, len(members))
	loopCtx, stopLoops := context.WithCancel(ctx)
	for i, m := range members {
		r, err := planner.Start(ctx, m.node.Host(), ids, planner.WithRTT(20*time.Millisecond), planner.WithTicks(10, 1))
		require.NoError(t, err)
		replicas[i] = r
		r.ServePlans()
		go func() {
			loops <- ReplanLoop(loopCtx, r, m.node.ID().String(), m.reg, ReplanConfig{Interval: 200 * time.Millisecond}, nil)
		}()
	}
	defer func() {
		stopLoops()
		for range members {
			require.ErrorIs(t, <-loops, context.Canceled)
		}
		for _, r := range replicas {
			require.NoError(t, r.Close(context.Background()))
		}
	}()
	require.NoError(t, a.reg.Publish(twoServerInfo(span(0, 2)), swarm.StateServing))
	require.NoError(t, b.reg.Publish(twoServerInfo(span(0, 2)), swarm.StateServing))

	watch := replicas[1].Watch(ctx)
	var plan planner.Plan
	for plan.Epoch == 0 {
		select {
		case plan = <-watch:
		case <-ctx.Done():
			t.Fatal("no plan epoch was committed")
		}
	}
	require.Equal(t, uint64(1), plan.Epoch)
	keep, move := a.reg.ID(), b.reg.ID()
	if keep > move { // the first node id by string order keeps its span
		keep, move = move, keep
	}
	require.Equal(t, map[string]swarm.Span{keep: span(0, 2), move: span(2, 4)}, plan.Assignment)
	require.Equal(t, []planner.Move{{Server: move, From: span(0, 2), To: span(2, 4)}}, plan.Moves)

	// The mover reports done and announces its new span.
	mover := a
	if move == b.reg.ID() {
		mover = b
	}
	stayer := a
	if mover == a {
		stayer = b
	}
	// Servers that are not replicas read the plan and report over
	// PlanProtocol; a report counts for the authenticated sender only.
	mc, err := planner.NewClient(mover.node.Host(), ids)
	require.NoError(t, err)
	got, err := mc.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, plan.Assignment, got.Assignment)
	sc, err := planner.NewClient(stayer.node.Host(), ids)
	require.NoError(t, err)
	require.ErrorContains(t, sc.Report(ctx, 1, planner.Progress{State: planner.MoveDone}), "has no move in epoch 1")
	require.NoError(t, mover.reg.Publish(twoServerInfo(span(2, 4)), swarm.StateServing))
	require.NoError(t, mc.Report(ctx, 1, planner.Progress{State: planner.MoveDone}))
	for plan.Status != planner.StatusDone {
		select {
		case plan = <-watch:
		case <-ctx.Done():
			t.Fatal("epoch 1 did not finish")
		}
	}
	// Several evaluation rounds (200 ms each) pass on every replica with
	// the fleet at its target: still epoch 1.
	require.Never(t, func() bool {
		cur, err := replicas[0].Current(ctx)
		return err != nil || cur.Epoch != 1
	}, 2*time.Second, 100*time.Millisecond)
}
