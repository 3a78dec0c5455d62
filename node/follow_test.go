package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// TestPlannersCoverAHole: three real servers follow a planner group of
// one (a replica on A's node): A and B hold 0:3 (memory for 3 blocks each),
// C holds 3:5. C stops; blocks 3:5 are uncovered while A and B hold the
// same span. Without a new server joining, the leader commits a plan that
// moves one of them over 3:5 (it drains first: 3 blocks of memory cannot
// hold both spans, and the other keeps 0:3 covered), the mover executes it,
// and every block is covered again; the epoch ends done.
func TestPlannersCoverAHole(t *testing.T) {
	cache := t.TempDir()
	boot := joinMemberWith(t, registrytest.P2PConfig(nil), moveRegistry())
	a := joinMemberWith(t, registrytest.P2PConfig(boot.node), moveRegistry())
	b := joinMemberWith(t, registrytest.P2PConfig(boot.node), moveRegistry())
	c := joinMemberWith(t, registrytest.P2PConfig(boot.node), moveRegistry())
	planners := []peer.ID{a.node.ID()}
	start := func(m *member, s swarm.Span) context.CancelFunc {
		cfg := serverConfig(t, cache, boot)
		cfg.Auto, cfg.Server.Blocks, cfg.Server.MemoryBytes = false, s, memoryFor(3)
		cfg.Planners, cfg.Replan.Interval = planners, 200*time.Millisecond
		stop, ready, _ := runServer(t, m, cfg)
		select {
		case <-ready:
		case <-time.After(p2pTimeout):
			t.Fatalf("server %s never served", s)
		}
		return stop
	}
	start(a, span(0, 3))
	start(b, span(0, 3))
	stopC := start(c, span(3, 5))

	covered := func(entries []registry.Entry) bool {
		var spans []swarm.Span
		for _, e := range entries {
			if e.State == swarm.StateServing && e.Info.Model == "stories260K" {
				spans = append(spans, e.Info.Span)
			}
		}
		return len(swarm.Uncovered(spans, span(0, 5))) == 0
	}
	require.Eventually(t, func() bool { return covered(boot.reg.Snapshot()) }, p2pTimeout, 50*time.Millisecond)
	stopC()
	require.Eventually(t, func() bool { return !covered(boot.reg.Snapshot()) }, p2pTimeout, 50*time.Millisecond, "C left: 3:5 uncovered")
	holeAt := time.Now()
	require.Eventually(t, func() bool { return covered(boot.reg.Snapshot()) }, p2pTimeout, 100*time.Millisecond,
		"a planned move covers 3:5 again without a new server")
	t.Logf("3:5 covered again %v after the hole showed in the registry", time.Since(holeAt).Round(10*time.Millisecond))
	var spans []string
	for _, e := range boot.reg.Snapshot() {
		if e.State == swarm.StateServing && (e.NodeID == a.reg.ID() || e.NodeID == b.reg.ID()) {
			spans = append(spans, e.Info.Span.String())
		}
	}
	require.ElementsMatch(t, []string{"0:3", "2:5"}, spans, "CG-BP over A and B: one keeps 0:3, the other covers 2:5")
}
