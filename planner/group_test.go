package planner

import (
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	"github.com/stretchr/testify/require"
)

// meshHosts returns n in-memory libp2p hosts (mocknet), all connected.
func meshHosts(t *testing.T, n int) []host.Host {
	t.Helper()
	mn, err := mocknet.FullMeshConnected(n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mn.Close() })
	return mn.Hosts()
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
