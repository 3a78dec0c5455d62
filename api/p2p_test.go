package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
)

func TestP2PEndpoint(t *testing.T) {
	const id = "12D3KooWRCvvbMLkGy8AaNM1hPChEeWikCD7GNDQMxrixzcRRHbC"
	ep := api.P2PEndpoint(id)
	require.Equal(t, api.Endpoint{
		Inference: "libp2p://" + id + "/swarm/inference/1",
		Info:      "libp2p://" + id + "/swarm/info/1",
	}, ep)
	got, ok := ep.Peer()
	require.True(t, ok)
	require.Equal(t, id, got)

	ws, err := api.ParseEndpoint("127.0.0.1:7000")
	require.NoError(t, err)
	_, ok = ws.Peer()
	require.False(t, ok, "a websocket endpoint has no peer")

	for _, in := range []string{"libp2p://" + id, " libp2p://" + id + "/swarm/inference/1 ", "libp2p://" + id + "/"} {
		p, err := api.ParseP2PEndpoint(in)
		require.NoError(t, err, in)
		require.Equal(t, ep, p, in)
	}
	for in, want := range map[string]string{
		"ws://127.0.0.1:1":            "want libp2p://PEERID",
		"libp2p://":                   "with a peer id",
		"libp2p://" + id + "/x/y":     "no other path",
		"libp2p:///swarm/inference/1": "with a peer id",
	} {
		_, err := api.ParseP2PEndpoint(in)
		require.ErrorIs(t, err, api.ErrBadAddress, in)
		require.ErrorContains(t, err, want, in)
	}
}
