package node

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// TestCandidates_Health: a server that crashes (stops heartbeating) turns
// unhealthy when this replica suspects it, reported through the Changed
// channels; by websocket URL and by libp2p endpoint; a
// DOWN server is unhealthy too; a server the registry never listed is not
// judged. The websocket URL is found in the entries, as for a client
// given its route by an ingress (no Endpoints call).
func TestCandidates_Health(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		reader := startMem(t, net, "client")
		ws := startMem(t, net, "ws")
		p2p := startMem(t, net, "p2p")
		down := startMem(t, net, "down")
		m := stories()
		info := func(s swarm.Span, endpoints ...string) swarm.ServerInfo {
			return swarm.ServerInfo{Model: m.Name, ModelBlocks: 5, Span: s, Endpoints: endpoints}
		}
		wsURL := "ws://127.0.0.1:7001/v1/inference"
		require.NoError(t, ws.reg.Publish(info(span(0, 2), wsURL), swarm.StateServing))
		require.NoError(t, p2p.reg.Publish(info(span(2, 5)), swarm.StateServing))
		require.NoError(t, down.reg.Publish(info(span(2, 5)), swarm.StateDown))
		synctest.Wait()

		c, err := NewCandidates(reader.reg, m) // Endpoints never called: as for a route handed over by an ingress
		require.NoError(t, err)
		wsEP, err := api.ParseEndpoint(wsURL)
		require.NoError(t, err)
		require.NoError(t, c.Health(wsEP))
		require.NoError(t, c.Health(api.P2PEndpoint(p2p.id)))
		require.ErrorContains(t, c.Health(api.P2PEndpoint(down.id)), "shows node "+down.id+" DOWN")
		stranger, err := api.ParseEndpoint("ws://127.0.0.1:9/v1/inference")
		require.NoError(t, err)
		require.NoError(t, c.Health(stranger), "not listed: not judged")

		ws.crash(t)
		start := time.Now()
		for { // each change closes the channel; one of them is ws's suspicion
			changed := c.Changed()
			if c.Health(wsEP) != nil {
				break
			}
			<-changed // fake clock; were it never closed, the bubble would deadlock and fail
		}
		require.ErrorContains(t, c.Health(wsEP), "shows node "+ws.id+" SUSPECTED")
		cfg := registrytest.FakeClockConfig()
		require.LessOrEqual(t, time.Since(start), cfg.SuspectAfter+cfg.SuspectAfter/8, "as soon as the replica suspects it")
		require.NoError(t, c.Health(api.P2PEndpoint(p2p.id)))
	})
}
