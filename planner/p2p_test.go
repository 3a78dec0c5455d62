package planner

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// Integration tests: replicas on the swarm's own libp2p nodes (package
// p2p: TCP on 127.0.0.1, Noise/TLS, a DHT-routed host), which find each
// other through a bootstrap peer and the DHT, as a planner group does on
// swarm nodes.

// p2pNode starts a node with identity key, bootstrapping from boot (nil
// for none), and closes it at the end of the test.
func p2pNode(t *testing.T, key crypto.PrivKey, boot *p2p.Node) *p2p.Node {
	t.Helper()
	opts := append(registrytest.P2POptions(), p2p.WithPrivateKey(key), p2p.WithDialTimeout(5*time.Second))
	n, err := p2p.New(registrytest.P2PConfig(boot), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), groupTimeout)
	defer cancel()
	require.NoError(t, n.WaitReady(ctx))
	return n
}

func newKey(t *testing.T) crypto.PrivKey {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(nil)
	require.NoError(t, err)
	return k
}

// TestP2PLeaderFailover runs 3 replicas on loopback libp2p: an epoch
// commits; the leader is killed (replica and host) during the epoch; the
// survivors elect a new leader, which aborts the unfinished epoch and
// commits the next; the killed node restarts with empty state on a new
// host with the same identity, is taken back under a new Raft id and
// catches up from a snapshot streamed over libp2p.
func TestP2PLeaderFailover(t *testing.T) {
	keys := []crypto.PrivKey{newKey(t), newKey(t), newKey(t)}
	nodes := []*p2p.Node{p2pNode(t, keys[0], nil)}
	nodes = append(nodes, p2pNode(t, keys[1], nodes[0]), p2pNode(t, keys[2], nodes[0]))
	hosts := make([]host.Host, 3)
	for i, n := range nodes {
		hosts[i] = n.Host()
	}
	members := ids(hosts)
	rs := make([]*Replica, 3)
	for i, h := range hosts {
		rs[i] = startReplica(t, h, members)
	}
	ctx := ctxFor(t)
	leader := waitLeader(t, rs)
	require.NoError(t, rs[leader].Propose(ctx, testPlan(1, "e1", "s1", "s2")))
	require.NoError(t, rs[(leader+1)%3].Report(ctx, 1, "s1", Progress{State: MoveStarted}))

	// Kill the leader mid-epoch.
	old := rs[leader]
	oldID := old.ID()
	require.NoError(t, old.Close(ctx))
	require.NoError(t, nodes[leader].Close())
	var live []*Replica
	for i, r := range rs {
		if i != leader {
			live = append(live, r)
		}
	}
	next := live[waitLeader(t, live)]
	require.NotEqual(t, hosts[leader].ID(), next.h.ID())

	cur, err := next.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), cur.Epoch)
	require.Equal(t, StatusActive, cur.Status)
	require.Equal(t, Progress{State: MoveStarted}, cur.Progress["s1"], "the report committed before the kill survives")
	require.NoError(t, next.Abort(ctx, 1, "leader lost during the move"))
	require.NoError(t, next.Propose(ctx, testPlan(2, "e2", "s3")))
	// More entries than the snapshot interval (4): the log the killed
	// replica would need is compacted, so it must receive a snapshot.
	require.NoError(t, next.Report(ctx, 2, "s3", Progress{State: MoveStarted}))
	require.NoError(t, next.Report(ctx, 2, "s3", Progress{State: MoveDone}))
	require.NoError(t, next.Propose(ctx, testPlan(3, "e3", "s1")))

	// Restart the killed node with empty state, bootstrapping from a
	// survivor: it reaches the other one through the DHT.
	var survivor *p2p.Node
	for i, n := range nodes {
		if i != leader {
			survivor = n
		}
	}
	h := p2pNode(t, keys[leader], survivor).Host()
	back := startReplica(t, h, members)
	require.Greater(t, back.ID(), uint64(3), "a restarted replica never reuses its old Raft id %d", oldID)
	got := waitPlan(t, back.Watch(ctx), 3, StatusActive)
	require.Equal(t, "e3", got.ProposalID)
	lr, err := back.nh.GetLogReader(shardID)
	require.NoError(t, err)
	require.Positive(t, lr.Snapshot().Index, "the restarted replica caught up without a snapshot")

	// The group of three works again: the restarted replica commits.
	all := append(live, back)
	waitLeader(t, all)
	require.NoError(t, back.Report(ctx, 3, "s1", Progress{State: MoveDone}))
	for _, r := range all {
		p, err := r.Current(ctx)
		require.NoError(t, err)
		require.Equal(t, StatusDone, p.Status, describe(p))
	}
	members2 := back.membership()
	require.Len(t, members2, 3)
	require.NotContains(t, members2, oldID)
	require.Equal(t, h.ID().String(), members2[back.ID()])
}
