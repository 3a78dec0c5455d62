package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// serverConfig is a RunServer configuration over stories260K: --blocks
// auto with memory for 2 blocks at R = 1 (see memoryFor), a loopback
// websocket, a fast settle.
func serverConfig(t *testing.T, cacheDir string, boot *member) ServerConfig {
	t.Helper()
	model, _ := storiesPath(t)
	sc := server.DefaultConfig()
	sc.Model, sc.MeasureCacheDir, sc.MemoryBytes, sc.DrainTimeout = model, cacheDir, memoryFor(2), 2*time.Second
	cfg := ServerConfig{Server: sc, Auto: true, Sessions: 1, MaxLength: 512, JoinSettle: 300 * time.Millisecond}
	if boot != nil {
		cfg.Bootstrap = []peer.AddrInfo{{ID: boot.node.ID(), Addrs: boot.node.Host().Addrs()}}
	}
	return cfg
}

// runServer runs RunServer in the background; ready gives what it
// reported ready, result waits for its return value. The test's cleanup
// cancels it and waits for it.
func runServer(t *testing.T, m *member, cfg ServerConfig) (stop context.CancelFunc, ready <-chan Serving, result func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	readyC := make(chan Serving, 1)
	finished := make(chan struct{})
	var err error
	go func() {
		defer close(finished)
		err = RunServer(ctx, m.node, m.reg, cfg, nil, func(s Serving) error {
			readyC <- s
			return nil
		})
	}()
	result = func() error {
		select {
		case <-finished:
			return err
		case <-time.After(p2pTimeout):
			return errors.New("RunServer did not return")
		}
	}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, result())
	})
	return cancel, readyC, result
}

// nextEntry reads w until an entry of node id satisfies cond.
func nextEntry(t *testing.T, w <-chan registry.Event, id, what string, cond func(registry.Entry) bool) registry.Entry {
	t.Helper()
	deadline := time.After(p2pTimeout)
	for {
		select {
		case ev, ok := <-w:
			require.True(t, ok, "watch closed while waiting for %s", what)
			if ev.Entry.NodeID == id && cond(ev.Entry) {
				return ev.Entry
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRunServer_Lifecycle follows one --blocks auto server through the
// registry: JOIN with a tentative span, JOIN with the final span, SERVING
// with its endpoints and measurements, its load as a session opens and
// closes, and LEFT when its context ends.
func TestRunServer_Lifecycle(t *testing.T) {
	cache := t.TempDir()
	boot := joinMember(t, registrytest.P2PConfig(nil))
	watch := boot.reg.Watch(t.Context())
	m := joinMember(t, registrytest.P2PConfig(boot.node))
	cfg := serverConfig(t, cache, boot)
	cfg.Server.Listen = "127.0.0.1:0"
	stop, ready, result := runServer(t, m, cfg)
	id := m.reg.ID()

	e := nextEntry(t, watch, id, "tentative JOIN", func(e registry.Entry) bool { return e.State == swarm.StateJoin })
	require.True(t, e.Info.Tentative)
	require.Equal(t, span(0, 2), e.Info.Span, "the first server of the swarm")
	require.Equal(t, memoryFor(2), e.Info.MemoryBytes)
	require.Greater(t, e.Info.Tau, 0.0, "measured on the probe block")
	require.Greater(t, e.Info.ClientRTT, 0.0, "pinged the bootstrap peer (no client node)")
	e = nextEntry(t, watch, id, "final JOIN", func(e registry.Entry) bool { return e.State == swarm.StateJoin && !e.Info.Tentative })
	require.Equal(t, span(0, 2), e.Info.Span)
	e = nextEntry(t, watch, id, "SERVING", func(e registry.Entry) bool { return e.State == swarm.StateServing })
	s := <-ready
	require.Equal(t, span(0, 2), s.Span)
	require.Equal(t, id, s.ID)
	require.Equal(t, s.URL, e.Info.Endpoints[0])
	require.Contains(t, e.Info.Endpoints, s.Addrs[0])
	require.Empty(t, e.Info.Sessions)
	require.Equal(t, 5, e.Info.ModelBlocks)
	freeBefore := e.Info.CacheBytesFree

	// A session through it (and a fixed server for blocks 2:5) changes its
	// advertised load; closing the session changes it back.
	rest := startServer(t, span(2, 5), cache)
	restURL := serveWebsocket(t, rest)
	cl, err := client.New(loadHead(t), []string{s.URL, restURL})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	sess, err := cl.Open(ctx, 100)
	require.NoError(t, err)
	e = nextEntry(t, watch, id, "one session", func(e registry.Entry) bool { return len(e.Info.Sessions) == 1 })
	require.Equal(t, 2, e.Info.Sessions[0].Caches)
	require.Equal(t, freeBefore-2*100*256, e.Info.CacheBytesFree, "2 blocks x 100 tokens x 256 bytes")
	require.NoError(t, sess.Close())
	e = nextEntry(t, watch, id, "no session", func(e registry.Entry) bool { return len(e.Info.Sessions) == 0 })
	require.Equal(t, freeBefore, e.Info.CacheBytesFree)

	stop()
	nextEntry(t, watch, id, "LEFT", func(e registry.Entry) bool { return e.State == swarm.StateLeft })
	require.NoError(t, result())
}

// TestRunServer_ConcurrentJoins starts four --blocks auto servers at the
// same moment: each announces the same tentative span, but after settling
// they take the spans of four sequential joins, 0:2 2:4 3:5 0:2 (see
// TestChooseSpan_Sequential), in some order.
func TestRunServer_ConcurrentJoins(t *testing.T) {
	cache := t.TempDir()
	boot := joinMember(t, registrytest.P2PConfig(nil))
	var members []*member
	for range 4 {
		members = append(members, joinMember(t, registrytest.P2PConfig(boot.node)))
	}
	var readies []<-chan Serving
	for _, m := range members {
		cfg := serverConfig(t, cache, boot)
		cfg.Server.Listen = "" // stream only: no websocket needed
		_, ready, _ := runServer(t, m, cfg)
		readies = append(readies, ready)
	}
	var spans []string
	for _, r := range readies {
		select {
		case s := <-r:
			spans = append(spans, s.Span.String())
		case <-time.After(p2pTimeout):
			t.Fatal("a server never served")
		}
	}
	slices.Sort(spans)
	require.Equal(t, []string{"0:2", "0:2", "2:4", "3:5"}, spans)
}

// TestRunServer_DownOnFailure checks that a server that fails after it
// joined announces DOWN and returns the error, and that a server too small
// for one block is refused before it announces anything.
func TestRunServer_DownOnFailure(t *testing.T) {
	cache := t.TempDir()
	boot := joinMember(t, registrytest.P2PConfig(nil))
	watch := boot.reg.Watch(t.Context())
	m := joinMember(t, registrytest.P2PConfig(boot.node))
	cfg := serverConfig(t, cache, boot)
	cfg.Auto, cfg.Server.Blocks, cfg.Server.Listen, cfg.Server.MemoryBytes = false, span(0, 5), "", 0
	failure := errors.New("ready failed")
	err := RunServer(t.Context(), m.node, m.reg, cfg, nil, func(Serving) error { return failure })
	require.ErrorIs(t, err, failure)
	e := nextEntry(t, watch, m.reg.ID(), "DOWN", func(e registry.Entry) bool { return e.State == swarm.StateDown })
	require.Equal(t, span(0, 5), e.Info.Span)

	small := joinMember(t, registrytest.P2PConfig(boot.node))
	cfg = serverConfig(t, cache, boot)
	cfg.Server.MemoryBytes = 200_000 // one block is 181760 bytes, plus R = 1 cache of 131072
	err = RunServer(t.Context(), small.node, small.reg, cfg, nil, nil)
	require.ErrorIs(t, err, ErrPlacement)
	require.True(t, strings.Contains(err.Error(), "cannot hold one block"), err.Error())
	_, announced := small.reg.Get(small.reg.ID())
	require.False(t, announced, "nothing announced")

	cfg.Server.MemoryBytes = 0
	require.ErrorIs(t, RunServer(t.Context(), small.node, small.reg, cfg, nil, nil), ErrBadConfig)
}

// pinnedServerConfig is serverConfig with the same tau_j and tauI_j for
// every server instead of each measuring its span: fixed-span servers
// advertise no client RTT, so with equal taus every chain of the same
// number of hops has the same idle per-token time, and replanning moves a
// server only for a hole or a block below capacity — not for the noise of
// separate measurements, which would make the tests' plans vary by run.
func pinnedServerConfig(t *testing.T, cacheDir string, boot *member) ServerConfig {
	cfg := serverConfig(t, cacheDir, boot)
	cfg.Server.Timing = &server.Timing{Tau: 5e-5, TauI: swarm.PrefillFit{Intercept: 1e-4, Slope: 5e-5}}
	return cfg
}
