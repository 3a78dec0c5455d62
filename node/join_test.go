package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// TestJoin starts a plain member on loopback: its registry publishes under
// the node's peer id; a bad node config is refused with p2p's error.
func TestJoin(t *testing.T) {
	m, err := Join(registrytest.P2PConfig(nil), registrytest.LoopbackConfig(), nil)
	require.NoError(t, err)
	require.Equal(t, m.Node.ID().String(), m.Registry.ID())
	require.NoError(t, m.Registry.Publish(swarm.ServerInfo{Model: "m", Span: span(0, 1)}, swarm.StateServing))
	e, ok := m.Registry.Get(m.Registry.ID())
	require.True(t, ok)
	require.Equal(t, swarm.StateServing, e.Announced)
	require.NoError(t, m.Close())

	bad := registrytest.P2PConfig(nil)
	bad.ListenAddrs = []string{"not a multiaddr"}
	_, err = Join(bad, registrytest.LoopbackConfig(), nil)
	require.ErrorIs(t, err, p2p.ErrBadConfig)
}
