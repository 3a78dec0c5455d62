package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// TestVerifyEntries: over real libp2p hosts on loopback, placement counts
// a SERVING entry only when its server answers over the entry's own
// identity with the entry's span: a real server is kept; a self-signed
// entry with nothing behind it, one whose server answers another span, and
// a black hole that accepts the info stream and never answers (bounded by
// the timeout) are left out with a WARN each; a JOIN entry passes.
func TestVerifyEntries(t *testing.T) {
	cache := t.TempDir()
	boot := joinMember(t, registrytest.P2PConfig(nil))
	real, fake, liar, hole, joiner := joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node)),
		joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node))

	srv := startServer(t, span(0, 5), cache)
	stop := ServeStreams(real.node.Host(), srv, 1<<20)
	defer stop()
	publish := func(m *member, s swarm.Span, state swarm.LifecycleState) {
		info := srv.Info().ServerInfo
		info.ID, info.Span, info.Endpoints = "", s, m.addrs()
		require.NoError(t, m.reg.Publish(info, state))
	}
	publish(real, span(0, 5), swarm.StateServing)
	publish(fake, span(0, 5), swarm.StateServing) // no stream handler at all
	liarSrv := startServer(t, span(0, 2), cache)
	stopLiar := ServeStreams(liar.node.Host(), liarSrv, 1<<20)
	defer stopLiar()
	publish(liar, span(2, 5), swarm.StateServing) // serves 0:2, claims 2:5
	hold := make(chan struct{})
	defer close(hold)
	hole.node.Host().SetStreamHandler(protocol.ID(api.InfoProtocol), func(s network.Stream) { <-hold; _ = s.Reset() })
	publish(hole, span(0, 5), swarm.StateServing)
	publish(joiner, span(0, 5), swarm.StateJoin)

	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	var snap []registry.Entry
	for len(snap) < 5 { // the boot member's replica holds the five entries
		snap = boot.reg.Snapshot()
		if len(snap) < 5 {
			select {
			case <-boot.reg.Changed():
			case <-ctx.Done():
				t.Fatalf("registry has %d entries, want 5", len(snap))
			}
		}
	}
	var logs testenv.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := time.Now()
	got := VerifyEntries(ctx, NewTransport(boot.node.Host(), entryAddrs(snap)), snap, boot.reg.ID(), 2*time.Second, log)
	elapsed := time.Since(start)
	var ids []string
	for _, e := range got {
		ids = append(ids, e.NodeID)
	}
	require.ElementsMatch(t, []string{real.reg.ID(), joiner.reg.ID()}, ids)
	out := logs.String()
	for _, m := range []*member{fake, liar, hole} {
		require.Contains(t, out, "node="+m.reg.ID())
	}
	require.Contains(t, out, "its server answers model \\\"stories260K\\\" span 0:2, the entry says \\\"stories260K\\\" span 2:5")
	require.GreaterOrEqual(t, elapsed, 2*time.Second, "the black hole is given its timeout")
	require.Less(t, elapsed, p2pTimeout/2, "and no more")
}
