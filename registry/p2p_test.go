package registry_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/record"
	"github.com/libp2p/go-msgio"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// Integration tests with real libp2p hosts on loopback (TCP), a handful of
// nodes so that -race stays fast on 2 cores. Waits are on Watch events,
// bounded by p2pTimeout.

const p2pTimeout = 30 * time.Second

type p2pMember struct {
	node *p2p.Node
	reg  *registry.Registry
}

func (m *p2pMember) close(t *testing.T) {
	t.Helper()
	require.NoError(t, m.reg.Close())
	require.NoError(t, m.node.Close())
}

func joinP2P(t *testing.T, key crypto.PrivKey, boot *p2pMember) *p2pMember {
	t.Helper()
	var bootNode *p2p.Node
	if boot != nil {
		bootNode = boot.node
	}
	cfg := registrytest.P2PConfig(bootNode)
	opts := registrytest.P2POptions()
	if key != nil {
		opts = append(opts, p2p.WithPrivateKey(key))
	}
	node, err := p2p.New(cfg, opts...)
	require.NoError(t, err)
	reg, err := registry.Join(node, registrytest.LoopbackConfig())
	require.NoError(t, err)
	return &p2pMember{node: node, reg: reg}
}

// waitFor reads w until cond holds for an event, or fails after p2pTimeout.
func waitFor(t *testing.T, w <-chan registry.Event, what string, cond func(registry.Event) bool) registry.Event {
	t.Helper()
	deadline := time.After(p2pTimeout)
	for {
		select {
		case ev, ok := <-w:
			require.True(t, ok, "watch closed while waiting for %s", what)
			if cond(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestP2P_ConvergeSuspectLeftRestart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	boot := joinP2P(t, nil, nil)
	defer boot.close(t)
	var members []*p2pMember
	for range 3 {
		members = append(members, joinP2P(t, nil, boot))
	}
	victimKey, _, err := crypto.GenerateEd25519Key(nil)
	require.NoError(t, err)
	victim := joinP2P(t, victimKey, boot)
	all := append([]*p2pMember{boot, victim}, members...)
	defer func() {
		for _, m := range members {
			m.close(t)
		}
	}()

	watches := make([]<-chan registry.Event, len(members))
	for i, m := range members {
		watches[i] = m.reg.Watch(ctx)
	}
	for i, m := range all {
		require.NoError(t, m.reg.Publish(swarm.ServerInfo{Model: "m", Span: swarm.Span{Start: i, End: i + 1}}, swarm.StateServing))
	}
	// Convergence: every member sees every server SERVING.
	for i, m := range members {
		seen := map[string]bool{}
		waitFor(t, watches[i], "all 5 entries", func(ev registry.Event) bool {
			if ev.Entry.State == swarm.StateServing {
				seen[ev.Entry.NodeID] = true
			}
			return len(seen) == len(all)
		})
		require.Len(t, m.reg.Snapshot(), len(all))
	}

	// The victim crashes (no LEFT announced): SUSPECTED, then LEFT.
	victimID := victim.reg.ID()
	firstSession := victim.reg.Session()
	victim.close(t)
	crashed := time.Now()
	for i := range members {
		prev := swarm.StateServing
		ev := waitFor(t, watches[i], "victim LEFT", func(ev registry.Event) bool {
			if ev.Entry.NodeID != victimID {
				return false
			}
			if ev.Entry.State == swarm.StateLeft {
				return true
			}
			prev = ev.Entry.State
			return false
		})
		require.Equal(t, swarm.StateSuspected, prev, "member %d: the silent victim must be SUSPECTED before LEFT", i)
		require.Equal(t, swarm.StateServing, ev.Entry.Announced, "LEFT by silence, not announced")
		require.GreaterOrEqual(t, ev.At.Sub(ev.Entry.Heartbeat), registrytest.LoopbackConfig().LeftAfter)
		require.True(t, ev.At.After(crashed))
	}

	// The victim restarts with the same identity: a new session, SERVING.
	reborn := joinP2P(t, victimKey, boot)
	defer reborn.close(t)
	require.Equal(t, victimID, reborn.reg.ID())
	require.NoError(t, reborn.reg.Publish(swarm.ServerInfo{Model: "m", Span: swarm.Span{Start: 1, End: 2}}, swarm.StateServing))
	require.NotEqual(t, firstSession, reborn.reg.Session())
	for i := range members {
		ev := waitFor(t, watches[i], "victim back", func(ev registry.Event) bool {
			return ev.Entry.NodeID == victimID && ev.Entry.State == swarm.StateServing
		})
		require.Equal(t, reborn.reg.Session(), ev.Entry.Session)
	}
}

// TestP2P_ForgedExchangeRejected pushes a forged entry over a real
// SyncProtocol stream.
func TestP2P_ForgedExchangeRejected(t *testing.T) {
	a := joinP2P(t, nil, nil)
	defer a.close(t)
	b := joinP2P(t, nil, a)
	defer b.close(t)
	require.NoError(t, a.reg.Publish(swarm.ServerInfo{Model: "m", Span: swarm.Span{Start: 0, End: 1}}, swarm.StateServing))
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	require.NoError(t, b.node.WaitReady(ctx))

	body := &forgedBody{
		NodeID: a.reg.ID(), Incarnation: 1 << 62, Session: "forged", State: swarm.StateServing, Version: 1,
		HeartbeatMs: time.Now().UnixMilli(),
		Info:        swarm.ServerInfo{ID: a.reg.ID(), Model: "m", Span: swarm.Span{Start: 0, End: 8}},
	}
	env, err := record.Seal(body, b.node.PrivateKey())
	require.NoError(t, err)
	signed, err := env.Marshal()
	require.NoError(t, err)
	state, err := json.Marshal(map[string][][]byte{"entries": {signed}})
	require.NoError(t, err)

	// A raw SyncProtocol exchange from b's host, independent of the
	// package's client code.
	s, err := b.node.Host().NewStream(ctx, a.node.ID(), registry.SyncProtocol)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, msgio.NewVarintWriter(s).WriteMsg(state))
	require.NoError(t, s.CloseWrite())
	reply, err := msgio.NewVarintReaderSize(s, registry.MaxMessageBytes).ReadMsg()
	require.NoError(t, err, "the exchange itself succeeds; the entry is dropped")
	var got struct{ Entries [][]byte }
	require.NoError(t, json.Unmarshal(reply, &got))
	require.Len(t, got.Entries, 1, "a replies with its genuine entry, newer than b's claim as far as it knows")
	e, ok := a.reg.Get(a.reg.ID())
	require.True(t, ok)
	require.NotEqual(t, "forged", e.Session)
	require.Equal(t, swarm.Span{Start: 0, End: 1}, e.Info.Span)
}
