package node

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// TestJoinClient_ClosesConnectionsToSuspectedPeers: when a server's
// registry goes silent (its process hangs) the client member's replica
// suspects it and the client closes its connection to that peer, so the
// next stream is dialled afresh.
func TestJoinClient_ClosesConnectionsToSuspectedPeers(t *testing.T) {
	boot := joinMember(t, registrytest.P2PConfig(nil))
	srv := joinMember(t, registrytest.P2PConfig(boot.node))
	require.NoError(t, srv.reg.Publish(swarm.ServerInfo{Model: "m", ModelBlocks: 5, Span: span(0, 5)}, swarm.StateServing))
	cn := joinClient(t, boot)
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	pid, err := peer.Decode(srv.reg.ID())
	require.NoError(t, err)
	for e, ok := cn.Registry.Get(srv.reg.ID()); !ok || !e.Routable(); e, ok = cn.Registry.Get(srv.reg.ID()) {
		select {
		case <-cn.Registry.Changed():
		case <-ctx.Done():
			t.Fatal("the client never saw the server SERVING")
		}
	}
	require.NoError(t, cn.Node.Host().Connect(ctx, peer.AddrInfo{ID: pid, Addrs: srv.node.Host().Addrs()}))
	disconnected := make(chan struct{}, 1)
	cn.Node.Host().Network().Notify(&network.NotifyBundle{DisconnectedF: func(_ network.Network, c network.Conn) {
		if c.RemotePeer() == pid {
			select {
			case disconnected <- struct{}{}:
			default:
			}
		}
	}})

	require.NoError(t, srv.reg.Close()) // silent from now on; its host stays up
	select {
	case <-disconnected:
	case <-ctx.Done():
		t.Fatal("the client kept its connection to the suspected server")
	}
	e, _ := cn.Registry.Get(srv.reg.ID())
	require.Contains(t, []swarm.LifecycleState{swarm.StateSuspected, swarm.StateLeft}, e.State)
}
