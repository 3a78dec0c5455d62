package registry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// These tests run on the in-memory twin inside synctest bubbles: time is
// fake, and time.Sleep advances it once every goroutine is blocked, so the
// runs are deterministic and take no wall time.

func TestPublish_PropagatesByGossip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b, c := start(t, net, "a"), start(t, net, "b"), start(t, net, "c")
		defer closeAll(t, a, b, c)
		a.publish(t, "stories260K", swarm.Span{Start: 0, End: 2}, swarm.StateServing)
		synctest.Wait() // the broadcast is delivered and merged; no time passes
		for _, m := range []*member{a, b, c} {
			e, ok := m.reg.Get(a.id)
			require.True(t, ok, "%s lacks a's entry", m.name)
			require.Equal(t, swarm.StateServing, e.State)
			require.Equal(t, swarm.Span{Start: 0, End: 2}, e.Info.Span)
			require.Equal(t, a.id, e.Info.ID)
			require.True(t, e.Routable())
		}
		// b and c publish nothing: client-only members are not in the map.
		require.Len(t, c.reg.Snapshot(), 1)
	})
}

// TestAntiEntropy_LateJoinerConverges starts a member after the others have
// published: gossip is over, so only anti-entropy can bring it the state.
func TestAntiEntropy_LateJoinerConverges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b := start(t, net, "a"), start(t, net, "b")
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		b.publish(t, "m", swarm.Span{Start: 1, End: 2}, swarm.StateServing)
		synctest.Wait()
		late := start(t, net, "late")
		defer closeAll(t, a, b, late)
		// Heartbeats also reach the late joiner by gossip; drop them so the
		// test proves the anti-entropy path.
		net.Drop(a.id, late.id, true)
		net.Drop(b.id, late.id, true)
		require.Empty(t, late.reg.Snapshot())
		time.Sleep(3 * time.Second) // anti-entropy runs within 1.5 intervals
		synctest.Wait()
		require.Equal(t, swarm.StateServing, late.stateOf(a.id))
		require.Equal(t, swarm.StateServing, late.stateOf(b.id))
	})
}

// TestSync_FetchesStateAtOnce is what `swarm status` does: join and pull.
func TestSync_FetchesStateAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a := start(t, net, "a")
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		synctest.Wait()
		client := start(t, net, "client")
		defer closeAll(t, a, client)
		require.NoError(t, client.reg.Sync(t.Context()))
		require.Equal(t, swarm.StateServing, client.stateOf(a.id))

		lonely := start(t, memtransport.NewNetwork(), "lonely")
		defer closeAll(t, lonely)
		require.ErrorIs(t, lonely.reg.Sync(t.Context()), registry.ErrNoPeers)
	})
}

// TestSilentNode_SuspectedThenLeftThenCollected crashes a server and checks
// what another member shows over (fake) time, through its Watch stream.
func TestSilentNode_SuspectedThenLeftThenCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b := start(t, net, "a"), start(t, net, "b")
		defer closeAll(t, b)
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		synctest.Wait()
		events := b.reg.Watch(t.Context())
		time.Sleep(1500 * time.Millisecond) // one heartbeat at +1 s
		synctest.Wait()
		e, _ := b.reg.Get(a.id)
		lastBeat := e.Heartbeat
		require.Equal(t, uint64(2), e.Version)
		a.crash(t)

		next := func() registry.Event {
			for ev := range events {
				if ev.Entry.NodeID == a.id && (ev.Entry.State != swarm.StateServing || ev.Removed) {
					return ev
				}
			}
			t.Fatal("watch closed")
			return registry.Event{}
		}
		cfg := registrytest.FakeClockConfig()
		sweep := cfg.SuspectAfter / 8
		ev := next()
		require.Equal(t, swarm.StateSuspected, ev.Entry.State)
		require.False(t, ev.Entry.Routable())
		require.WithinRange(t, ev.At, lastBeat.Add(cfg.SuspectAfter), lastBeat.Add(cfg.SuspectAfter+sweep))
		ev = next()
		require.Equal(t, swarm.StateLeft, ev.Entry.State)
		require.False(t, ev.Removed)
		require.WithinRange(t, ev.At, lastBeat.Add(cfg.LeftAfter), lastBeat.Add(cfg.LeftAfter+sweep))
		ev = next()
		require.True(t, ev.Removed)
		require.WithinRange(t, ev.At, lastBeat.Add(cfg.LeftAfter+cfg.Retention), lastBeat.Add(cfg.LeftAfter+cfg.Retention+sweep))
		_, ok := b.reg.Get(a.id)
		require.False(t, ok)
	})
}

// TestSuspicion_RefutedByFreshHeartbeat cuts a server off from a client for
// longer than SuspectAfter, then heals: the client shows SUSPECTED, then
// SERVING again with the same session.
func TestSuspicion_RefutedByFreshHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b := start(t, net, "a"), start(t, net, "b")
		defer closeAll(t, a, b)
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		synctest.Wait()
		session := a.reg.Session()
		net.Partition([]string{a.id}, []string{b.id})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Equal(t, swarm.StateSuspected, b.stateOf(a.id))
		require.Equal(t, swarm.StateServing, a.stateOf(a.id), "a node never suspects itself")
		net.Heal()
		time.Sleep(1100 * time.Millisecond) // the next heartbeat
		synctest.Wait()
		e, _ := b.reg.Get(a.id)
		require.Equal(t, swarm.StateServing, e.State)
		require.Equal(t, session, e.Session)
	})
}

// TestPartitionHeal is the scenario test of issue 5: six members, a
// partition with writes on both sides (a new span, a DOWN, and a LEFT
// announced by a node that then dies), then healing; every member must
// converge. The dead node's LEFT can only cross by anti-entropy, since it
// sends no more heartbeats.
func TestPartitionHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		names := []string{"a", "b", "c", "d", "e", "f"}
		ms := map[string]*member{}
		var all []*member
		for _, n := range names {
			m := start(t, net, n)
			ms[n] = m
			all = append(all, m)
		}
		for i, m := range all {
			m.publish(t, "m", swarm.Span{Start: i, End: i + 1}, swarm.StateServing)
		}
		synctest.Wait()
		require.True(t, sameView(all...))
		left, right := []*member{ms["a"], ms["b"], ms["c"]}, []*member{ms["d"], ms["e"], ms["f"]}
		ids := func(g []*member) []string {
			var out []string
			for _, m := range g {
				out = append(out, m.id)
			}
			return out
		}
		net.Partition(ids(left), ids(right))

		// Writes on both sides.
		ms["a"].publish(t, "m", swarm.Span{Start: 0, End: 3}, swarm.StateServing)
		require.NoError(t, ms["d"].reg.SetState(swarm.StateDown))
		require.NoError(t, ms["f"].reg.Leave(t.Context()))
		ms["f"].crash(t)
		alive := []*member{ms["a"], ms["b"], ms["c"], ms["d"], ms["e"]}
		defer closeAll(t, alive...)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for _, m := range left {
			e, _ := m.reg.Get(ms["a"].id)
			require.Equal(t, swarm.Span{Start: 0, End: 3}, e.Info.Span, "%s", m.name)
			require.Equal(t, swarm.StateServing, m.stateOf(ms["d"].id), "%s must not see d's DOWN yet", m.name)
			e, _ = m.reg.Get(ms["f"].id)
			require.Equal(t, swarm.StateServing, e.Announced, "%s must not see f's LEFT yet", m.name)
		}
		for _, m := range right[:2] {
			e, _ := m.reg.Get(ms["a"].id)
			require.Equal(t, swarm.Span{Start: 0, End: 1}, e.Info.Span, "%s must not see a's new span yet", m.name)
			require.Equal(t, swarm.StateDown, m.stateOf(ms["d"].id))
			require.Equal(t, swarm.StateLeft, m.stateOf(ms["f"].id))
		}
		// The other side goes silent: SUSPECTED after SuspectAfter.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, swarm.StateSuspected, ms["b"].stateOf(ms["e"].id))
		require.Equal(t, swarm.StateSuspected, ms["e"].stateOf(ms["b"].id))
		require.Equal(t, swarm.StateSuspected, ms["b"].stateOf(ms["f"].id))

		// Heal: heartbeats and anti-entropy converge everyone.
		net.Heal()
		time.Sleep(3 * registrytest.FakeClockConfig().AntiEntropyInterval)
		synctest.Wait()
		require.True(t, sameView(alive...))
		for _, m := range alive {
			snap := m.reg.Snapshot()
			require.Len(t, snap, 6)
			for _, e := range snap {
				want := swarm.StateServing
				switch e.NodeID {
				case ms["d"].id:
					want = swarm.StateDown
				case ms["f"].id:
					want = swarm.StateLeft
					require.Equal(t, swarm.StateLeft, e.Announced, "%s: f's announced LEFT crossed the healed partition", m.name)
				}
				require.Equal(t, want, e.State, "%s sees %s", m.name, e.NodeID)
			}
			e, _ := m.reg.Get(ms["a"].id)
			require.Equal(t, swarm.Span{Start: 0, End: 3}, e.Info.Span)
		}
	})
}

// TestRestart_NewSessionReplacesOldLife restarts a node (same key, new
// process) after a crash and after a graceful LEFT: both times the new life
// wins with a new session id.
func TestRestart_NewSessionReplacesOldLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b := start(t, net, "a"), start(t, net, "b")
		defer closeAll(t, b)
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		synctest.Wait()
		first := a.reg.Session()

		require.NoError(t, a.reg.Leave(t.Context()))
		synctest.Wait()
		require.Equal(t, swarm.StateLeft, b.stateOf(a.id))
		a.crash(t)

		a2 := start(t, net, "a")
		require.NoError(t, a2.reg.Sync(t.Context())) // learns its previous life
		a2.publish(t, "m", swarm.Span{Start: 0, End: 2}, swarm.StateJoin)
		synctest.Wait()
		second := a2.reg.Session()
		require.NotEqual(t, first, second)
		e, _ := b.reg.Get(a.id)
		require.Equal(t, second, e.Session)
		require.Equal(t, swarm.StateJoin, e.State, "a new life beats the LEFT of the old one")
		a2.publish(t, "m", swarm.Span{Start: 0, End: 2}, swarm.StateServing)
		synctest.Wait()
		require.Equal(t, swarm.StateServing, b.stateOf(a.id))
		require.Equal(t, second, a2.reg.Session(), "JOIN -> SERVING stays in the session")

		a2.crash(t)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Equal(t, swarm.StateSuspected, b.stateOf(a.id))
		a3 := start(t, net, "a")
		defer closeAll(t, a3)
		a3.publish(t, "m", swarm.Span{Start: 0, End: 2}, swarm.StateServing)
		synctest.Wait()
		e, _ = b.reg.Get(a.id)
		require.Equal(t, swarm.StateServing, e.State)
		require.Equal(t, a3.reg.Session(), e.Session)
		require.NotEqual(t, second, e.Session)
	})
}

// TestDownThenJoin_StartsNewSession: within a session the state only rises,
// so going back from DOWN to JOIN starts a new one.
func TestDownThenJoin_StartsNewSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b := start(t, net, "a"), start(t, net, "b")
		defer closeAll(t, a, b)
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		s1 := a.reg.Session()
		require.NoError(t, a.reg.SetState(swarm.StateDown))
		require.Equal(t, s1, a.reg.Session())
		require.NoError(t, a.reg.SetState(swarm.StateJoin))
		require.NotEqual(t, s1, a.reg.Session())
		synctest.Wait()
		e, _ := b.reg.Get(a.id)
		require.Equal(t, swarm.StateJoin, e.State)
		require.Equal(t, a.reg.Session(), e.Session)
	})
}

func TestPublish_BadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a := start(t, net, "a")
		require.ErrorIs(t, a.reg.SetState(swarm.StateServing), registry.ErrNotPublished)
		require.ErrorIs(t, a.reg.Publish(swarm.ServerInfo{}, swarm.StateSuspected), registry.ErrBadEntry)
		require.ErrorIs(t, a.reg.Publish(swarm.ServerInfo{}, swarm.StateUnknown), registry.ErrBadEntry)
		require.ErrorIs(t, a.reg.Publish(swarm.ServerInfo{ID: "someone-else"}, swarm.StateJoin), registry.ErrBadEntry)
		big := swarm.ServerInfo{Sessions: make([]swarm.SessionLoad, 5000)}
		require.ErrorIs(t, a.reg.Publish(big, swarm.StateJoin), registry.ErrBadEntry)
		require.Equal(t, "", a.reg.Session(), "failed publishes start no session")
		closeAll(t, a)
		require.ErrorIs(t, a.reg.Publish(swarm.ServerInfo{}, swarm.StateJoin), registry.ErrClosed)
		require.NoError(t, a.reg.Close(), "Close is idempotent")
	})
}

func TestWatch_ClosesWithContextAndRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a := start(t, net, "a")
		ctx, cancel := context.WithCancel(t.Context())
		w1 := a.reg.Watch(ctx)
		w2 := a.reg.Watch(t.Context())
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateJoin)
		ev := <-w1
		require.Equal(t, a.id, ev.Entry.NodeID)
		require.Equal(t, swarm.StateJoin, ev.Entry.State)
		cancel()
		for range w1 {
		}
		closeAll(t, a)
		n := 0
		for range w2 {
			n++
		}
		require.GreaterOrEqual(t, n, 0)
		_, open := <-a.reg.Watch(t.Context())
		require.False(t, open, "Watch after Close returns a closed channel")
	})
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []registry.Config{registry.DefaultConfig(), registry.DefaultLANConfig(), registry.DefaultWANConfig()} {
		require.NoError(t, c.Validate())
	}
	tests := map[string]func(*registry.Config){
		"heartbeat":    func(c *registry.Config) { c.HeartbeatInterval = 0 },
		"suspect":      func(c *registry.Config) { c.SuspectAfter = c.HeartbeatInterval },
		"left":         func(c *registry.Config) { c.LeftAfter = c.SuspectAfter },
		"retention":    func(c *registry.Config) { c.Retention = 0 },
		"anti-entropy": func(c *registry.Config) { c.AntiEntropyInterval = -time.Second },
		"skew":         func(c *registry.Config) { c.MaxClockSkew = c.SuspectAfter },
	}
	for name, mod := range tests {
		t.Run(name, func(t *testing.T) {
			c := registry.DefaultConfig()
			mod(&c)
			err := c.Validate()
			require.ErrorIs(t, err, registry.ErrBadConfig)
			require.Contains(t, err.Error(), "--")
		})
	}
}

// TestDefaultLAN_SilentServerLeavesRoutingWithin5s pins issue 5's "killing
// one server removes it from routing within 5 s" for the default (LAN)
// timing: whatever the phase of the crash relative to the heartbeats, a
// member that was watching shows it SUSPECTED within 5 s.
func TestDefaultLAN_SilentServerLeavesRoutingWithin5s(t *testing.T) {
	for _, phase := range []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 999 * time.Millisecond} {
		t.Run(phase.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				net := memtransport.NewNetwork()
				mk := func(name string) *member {
					tr := net.Join(registrytest.ID(t, name))
					reg, err := registry.New(tr, registrytest.Key(t, name), registry.DefaultLANConfig())
					require.NoError(t, err)
					return &member{name: name, id: registrytest.ID(t, name), tr: tr, reg: reg}
				}
				server, client := mk("server"), mk("client")
				defer closeAll(t, client)
				server.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
				time.Sleep(10*time.Second + phase)
				synctest.Wait()
				require.True(t, client.reg.Snapshot()[0].Routable())
				events := client.reg.Watch(t.Context())
				server.crash(t)
				crashed := time.Now()
				for ev := range events {
					if ev.Entry.NodeID == server.id && ev.Entry.State != swarm.StateServing {
						require.Equal(t, swarm.StateSuspected, ev.Entry.State)
						require.LessOrEqual(t, ev.At.Sub(crashed), 5*time.Second)
						return
					}
				}
			})
		})
	}
}
