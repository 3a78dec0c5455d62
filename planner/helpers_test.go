package planner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// Waits in these tests are bounded by groupTimeout; conditions are polled
// with require.Eventually, never slept on.
const (
	groupTimeout = 60 * time.Second
	pollEvery    = 10 * time.Millisecond
)

// testOptions are fast Raft settings for loopback: 20 ms RTT, an election
// after 200-400 ms without a leader, a snapshot every 4 entries.
func testOptions() []Option {
	return []Option{WithRTT(20 * time.Millisecond), WithTicks(10, 1), WithSnapshotEvery(4, 1), WithJoinTimeout(10 * time.Second)}
}

func ids(hosts []host.Host) []peer.ID {
	out := make([]peer.ID, len(hosts))
	for i, h := range hosts {
		out[i] = h.ID()
	}
	return out
}

// startReplica starts a replica on h and closes it at the end of the test.
func startReplica(t *testing.T, h host.Host, members []peer.ID) *Replica {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), groupTimeout)
	defer cancel()
	r, err := Start(ctx, h, members, testOptions()...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

// waitLeader waits until every replica of live names the same leader, one
// of live, and returns its index in live.
func waitLeader(t *testing.T, live []*Replica) int {
	t.Helper()
	leader := -1
	require.Eventually(t, func() bool {
		first, ok := live[0].Leader()
		if !ok {
			return false
		}
		for _, r := range live[1:] {
			if l, ok := r.Leader(); !ok || l != first {
				return false
			}
		}
		for i, r := range live {
			if r.h.ID() == first {
				leader = i
				return true
			}
		}
		return false
	}, groupTimeout, pollEvery, "no leader agreed by the live replicas")
	return leader
}

// waitPlan waits until w delivers a plan of the given epoch and status.
func waitPlan(t *testing.T, w <-chan Plan, epoch uint64, status Status) Plan {
	t.Helper()
	timeout := time.After(groupTimeout)
	for {
		select {
		case p, ok := <-w:
			require.True(t, ok, "watch closed before epoch %d was %s", epoch, status)
			if p.Epoch == epoch && p.Status == status {
				return p
			}
		case <-timeout:
			t.Fatalf("epoch %d never became %s", epoch, status)
		}
	}
}

// testPlan is an epoch moving server s1 (and s2 when given) to new spans.
func testPlan(epoch uint64, id string, servers ...string) Plan {
	p := Plan{Epoch: epoch, ProposalID: id, Assignment: map[string]swarm.Span{}}
	for i, s := range servers {
		to := swarm.Span{Start: 4 * i, End: 4*i + 4}
		p.Assignment[s] = to
		p.Moves = append(p.Moves, Move{Server: s, From: swarm.Span{Start: 0, End: 8}, To: to, Step: i})
	}
	return p
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), groupTimeout)
	t.Cleanup(cancel)
	return ctx
}

func describe(p Plan) string { return fmt.Sprintf("epoch %d %s (%s)", p.Epoch, p.Status, p.ProposalID) }
