package planner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	"github.com/stretchr/testify/require"
)

// meshNet returns n in-memory libp2p hosts (mocknet), all connected, and
// their network (to partition it).
func meshNet(t *testing.T, n int) ([]host.Host, mocknet.Mocknet) {
	t.Helper()
	mn, err := mocknet.FullMeshConnected(n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mn.Close() })
	return mn.Hosts(), mn
}

func meshHosts(t *testing.T, n int) []host.Host {
	hosts, _ := meshNet(t, n)
	return hosts
}

// TestGroupCommitsEpochs runs 3 replicas over in-memory libp2p: an epoch
// proposed on a follower is seen by every replica; reports close it.
func TestGroupCommitsEpochs(t *testing.T) {
	hosts := meshHosts(t, 3)
	members := ids(hosts)
	var rs []*Replica
	for _, h := range hosts {
		rs = append(rs, startReplica(t, h, members))
	}
	leader := waitLeader(t, rs)
	follower := rs[(leader+1)%3]
	ctx := ctxFor(t)

	var watches []<-chan Plan
	for _, r := range rs {
		watches = append(watches, r.Watch(ctx))
	}
	require.NoError(t, follower.Propose(ctx, testPlan(1, "first", "s1", "s2")))
	for _, w := range watches {
		waitPlan(t, w, 1, StatusActive)
	}

	require.NoError(t, rs[leader].Report(ctx, 1, "s1", Progress{State: MoveDone}))
	err := follower.Report(ctx, 1, "s9", Progress{State: MoveDone})
	require.ErrorIs(t, err, ErrUnknownServer)
	require.NoError(t, follower.Report(ctx, 1, "s2", Progress{State: MoveDone}))
	for i, r := range rs {
		p, err := r.Current(ctx)
		require.NoError(t, err)
		require.Equal(t, StatusDone, p.Status, "replica %d: %s", i, describe(p))
		require.Equal(t, "first", p.ProposalID)
	}
	err = follower.Propose(ctx, testPlan(3, "skips", "s1"))
	require.ErrorIs(t, err, ErrWrongEpoch)
}

// TestOnePlanPerEpoch proposes different plans for the same next epoch
// from every replica at once: exactly one commits, the others are refused
// with ErrWrongEpoch, and every replica reads the winner.
func TestOnePlanPerEpoch(t *testing.T) {
	hosts := meshHosts(t, 3)
	members := ids(hosts)
	var rs []*Replica
	for _, h := range hosts {
		rs = append(rs, startReplica(t, h, members))
	}
	waitLeader(t, rs)
	ctx := ctxFor(t)

	const perReplica = 2
	names := []string{"a0", "a1", "b0", "b1", "c0", "c1"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Go(func() { errs[i] = rs[i/perReplica].Propose(ctx, testPlan(1, names[i], "s1")) })
	}
	wg.Wait()
	winner := ""
	for i, err := range errs {
		if err == nil {
			require.Empty(t, winner, "both %s and %s committed epoch 1", winner, names[i])
			winner = names[i]
			continue
		}
		require.ErrorIs(t, err, ErrWrongEpoch, names[i])
	}
	require.NotEmpty(t, winner, "no proposal committed: %v", errs)
	for _, r := range rs {
		p, err := r.Current(ctx)
		require.NoError(t, err)
		require.Equal(t, uint64(1), p.Epoch)
		require.Equal(t, winner, p.ProposalID)
	}
}

// TestLateStarter starts the third replica after the other two elected a
// leader and committed an epoch: it is admitted under a new Raft id and
// catches up.
func TestLateStarter(t *testing.T) {
	hosts := meshHosts(t, 3)
	members := ids(hosts)
	rs := []*Replica{startReplica(t, hosts[0], members), startReplica(t, hosts[1], members)}
	waitLeader(t, rs)
	ctx := ctxFor(t)
	require.NoError(t, rs[0].Propose(ctx, testPlan(1, "early", "s1")))

	late := startReplica(t, hosts[2], members)
	require.Equal(t, uint64(4), late.ID(), "ids 1-3 are the initial members")
	require.Equal(t, "early", waitPlan(t, late.Watch(ctx), 1, StatusActive).ProposalID)
	rs = append(rs, late)
	waitLeader(t, rs)
	require.NoError(t, late.Report(ctx, 1, "s1", Progress{State: MoveDone}))
}

// TestPartitionedLeaderCannotCommit cuts the leader off from both
// followers: its proposal for epoch 1 never commits, the majority elects a
// new leader and commits its own epoch 1, and after the partition heals
// every replica holds the majority's plan. The old leader's watch never
// shows the minority's plan.
func TestPartitionedLeaderCannotCommit(t *testing.T) {
	hosts, mn := meshNet(t, 3)
	members := ids(hosts)
	var rs []*Replica
	for _, h := range hosts {
		rs = append(rs, startReplica(t, h, members))
	}
	leader := waitLeader(t, rs)
	ctx := ctxFor(t)
	seen := make(chan Plan, 64)
	go func(w <-chan Plan) {
		for p := range w {
			seen <- p
		}
		close(seen)
	}(rs[leader].Watch(ctx))

	cut := func(link bool) {
		for i := range hosts {
			if i == leader {
				continue
			}
			a, b := hosts[leader].ID(), hosts[i].ID()
			if link {
				_, err := mn.LinkPeers(a, b)
				require.NoError(t, err)
				_, err = mn.ConnectPeers(a, b)
				require.NoError(t, err)
				continue
			}
			require.NoError(t, mn.DisconnectPeers(a, b))
			require.NoError(t, mn.UnlinkPeers(a, b))
		}
	}
	cut(false)
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := rs[leader].Propose(short, testPlan(1, "minority", "s1"))
	cancel()
	require.Error(t, err, "a leader cut off from the majority committed a plan")

	var majority []*Replica
	for i, r := range rs {
		if i != leader {
			majority = append(majority, r)
		}
	}
	waitLeader(t, majority)
	require.NoError(t, majority[0].Propose(ctx, testPlan(1, "majority", "s1")))

	cut(true)
	require.Eventually(t, func() bool {
		p, err := rs[leader].Current(ctx)
		return err == nil && p.ProposalID == "majority"
	}, groupTimeout, pollEvery)
	for _, r := range rs {
		require.NoError(t, r.Close(ctx))
	}
	for p := range seen {
		require.NotEqual(t, "minority", p.ProposalID, "the old leader applied the minority's plan: %s", describe(p))
	}
}

// TestStartRefusesBadMembers checks the member list rules.
func TestStartRefusesBadMembers(t *testing.T) {
	hosts := meshHosts(t, 4)
	all := ids(hosts)
	tests := []struct {
		name    string
		members []peer.ID
		says    string
	}{
		{"two members", all[:2], "2 members (want 1, 3 or 5)"},
		{"four members", all, "4 members"},
		{"self missing", all[1:], "is not among the 3 members"},
		{"duplicate", []peer.ID{all[0], all[1], all[1]}, "listed twice"},
	}
	for _, tt := range tests {
		_, err := Start(t.Context(), hosts[0], tt.members, testOptions()...)
		require.ErrorIs(t, err, ErrBadConfig, tt.name)
		require.ErrorContains(t, err, tt.says, tt.name)
	}
	_, err := Start(t.Context(), hosts[0], all[:1], WithTicks(4, 1))
	require.ErrorIs(t, err, ErrBadConfig)
}

// TestSingleReplica runs a group of one: it leads itself and commits; its
// watches close when it closes, and calls after Close fail with ErrClosed.
func TestSingleReplica(t *testing.T) {
	h := meshHosts(t, 1)[0]
	r := startReplica(t, h, []peer.ID{h.ID()})
	waitLeader(t, []*Replica{r})
	ctx := ctxFor(t)
	w := r.Watch(ctx)
	require.Equal(t, uint64(0), (<-w).Epoch, "the first value is the plan before any epoch")
	require.NoError(t, r.Propose(ctx, testPlan(1, "solo", "s1")))
	require.Equal(t, "solo", waitPlan(t, w, 1, StatusActive).ProposalID)

	require.NoError(t, r.Close(ctx))
	require.NoError(t, r.Close(ctx), "Close twice")
	for range w { // drains, then ends: the watch is closed
	}
	_, err := r.Current(ctx)
	require.ErrorIs(t, err, ErrClosed)
}

// TestFiveReplicasLoseTwo runs a group of five: with two replicas closed
// the other three still commit, and a proposal through any of them is
// seen by all three.
func TestFiveReplicasLoseTwo(t *testing.T) {
	hosts := meshHosts(t, 5)
	members := ids(hosts)
	var rs []*Replica
	for _, h := range hosts {
		rs = append(rs, startReplica(t, h, members))
	}
	leader := waitLeader(t, rs)
	ctx := ctxFor(t)
	require.NoError(t, rs[(leader+1)%5].Propose(ctx, testPlan(1, "five", "s1")))

	down := []int{leader, (leader + 2) % 5}
	var live []*Replica
	for i, r := range rs {
		if i == down[0] || i == down[1] {
			require.NoError(t, r.Close(ctx))
			continue
		}
		live = append(live, r)
	}
	waitLeader(t, live)
	require.NoError(t, live[0].Abort(ctx, 1, "two replicas lost"))
	require.NoError(t, live[2].Propose(ctx, testPlan(2, "three-left", "s2")))
	for _, r := range live {
		p, err := r.Current(ctx)
		require.NoError(t, err)
		require.Equal(t, "three-left", p.ProposalID)
	}
}
