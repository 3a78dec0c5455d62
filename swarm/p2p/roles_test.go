package p2p

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"
)

// TestAdvertiseAt_FindAtAndPing has a DHT-client node advertise itself at
// the client rendezvous; a server node joining later finds it there and
// pings it.
func TestAdvertiseAt_FindAtAndPing(t *testing.T) {
	boot := startNode(t, nil)
	client := startNode(t, func(c *Config) {
		c.Bootstrap = addrStrings(boot)
		c.DHTMode = DHTModeClient
	})
	waitReady(t, client)
	require.NoError(t, client.AdvertiseAt(ClientRendezvous))
	srv := startNode(t, func(c *Config) { c.Bootstrap = addrStrings(boot) })
	waitReady(t, srv)

	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	var found []peer.AddrInfo
	err := retryWithBackoff(ctx, fastBackoff()(), func(ctx context.Context) bool {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		found, err = srv.FindAt(lctx, ClientRendezvous, 4)
		return err == nil && len(found) > 0
	})
	require.NoError(t, err, "the client never appeared at the rendezvous")
	require.Len(t, found, 1)
	require.Equal(t, client.ID(), found[0].ID)

	rtt, err := srv.Ping(ctx, found[0], 3)
	require.NoError(t, err)
	require.Greater(t, rtt, time.Duration(0))
	require.Less(t, rtt, 5*time.Second)

	// The rendezvous of ordinary nodes does not list the client (it is a
	// DHT client and does not advertise there).
	nodes, err := srv.FindAt(ctx, DefaultRendezvous, 8)
	require.NoError(t, err)
	for _, n := range nodes {
		require.NotEqual(t, client.ID(), n.ID)
	}
}

func TestRoles_Errors(t *testing.T) {
	n := startNode(t, nil)
	require.ErrorIs(t, n.AdvertiseAt(""), ErrBadConfig)
	_, err := n.FindAt(t.Context(), ClientRendezvous, 0)
	require.ErrorIs(t, err, ErrBadConfig)
	_, err = n.Ping(t.Context(), peer.AddrInfo{ID: n.ID()}, 1)
	require.ErrorIs(t, err, ErrBadConfig)
	_, err = n.Ping(t.Context(), peer.AddrInfo{ID: n.ID()}, 0)
	require.ErrorIs(t, err, ErrBadConfig)

	closed, err := New(Config{DHTMode: DHTModeServer, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}})
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	require.ErrorIs(t, closed.AdvertiseAt(ClientRendezvous), ErrClosed)
	_, err = closed.FindAt(t.Context(), ClientRendezvous, 1)
	require.ErrorIs(t, err, ErrClosed)
}
