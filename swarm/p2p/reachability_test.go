package p2p

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/stretchr/testify/require"
)

func TestReachabilityOf(t *testing.T) {
	m := func(s string) ma.Multiaddr { return ma.StringCast(s) }
	circuit := []ma.Multiaddr{m("/ip4/203.0.113.9/tcp/4001/p2p/12D3KooWCZ67PtTeGdHWHRvrqTwQpd5ovNHPaXn4ZADzUdaGtnyr/p2p-circuit")}
	lan := []ma.Multiaddr{m("/ip4/192.168.1.20/tcp/4001")}
	tests := []struct {
		name      string
		autonat   network.Reachability
		viaRelay  bool
		listen    []ma.Multiaddr
		want      Reachability
		confirmed bool
	}{
		{name: "AutoNAT public", autonat: network.ReachabilityPublic, listen: lan, want: ReachDirect, confirmed: true},
		{name: "AutoNAT private with a reservation", autonat: network.ReachabilityPrivate, viaRelay: true, listen: lan, want: ReachRelayed, confirmed: true},
		{name: "AutoNAT private without", autonat: network.ReachabilityPrivate, listen: lan, want: ReachUnreachable, confirmed: true},
		{name: "no verdict, own address", listen: lan, want: ReachDirect},
		{name: "no verdict, own address and a relay", viaRelay: true, listen: lan, want: ReachDirect},
		{name: "no verdict, only a relay", viaRelay: true, want: ReachRelayed},
		{name: "no verdict, listening on nothing", want: ReachUnreachable},
		{name: "no verdict, only circuits", listen: circuit, want: ReachUnreachable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, confirmed := ReachabilityOf(tc.autonat, tc.viaRelay, tc.listen)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.confirmed, confirmed)
		})
	}
}

// waitReachability waits until n's verdict is want (and confirmed as
// asked), reading it again on every change.
func waitReachability(t *testing.T, n *Node, want Reachability, confirmed bool) {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		r, c := n.Reachability()
		if r == want && c == confirmed {
			return
		}
		select {
		case <-n.ReachabilityChanged():
		case <-deadline:
			t.Fatalf("reachability %s (confirmed %v), want %s (confirmed %v)", r, c, want, confirmed)
		}
	}
}

// TestNode_Reachability: a loopback node is direct before AutoNAT
// decides (it never does on loopback: too few peers to dial back); a
// --relay-service node is direct and confirmed (it vouches for itself);
// the hidden node of TestNode_CircuitRelay (behind a NAT, listening on
// nothing) is unreachable until it holds a reservation on the relay,
// then relayed.
func TestNode_Reachability(t *testing.T) {
	plain := startNode(t, nil)
	r, confirmed := plain.Reachability()
	require.Equal(t, ReachDirect, r)
	require.False(t, confirmed)

	relay := startNode(t, func(c *Config) { c.RelayService = true })
	waitReachability(t, relay, ReachDirect, true)

	hidden := startNode(t, func(c *Config) { c.Bootstrap = addrStrings(relay) },
		WithLibp2pOptions(libp2p.ForceReachabilityPrivate(), libp2p.NoListenAddrs))
	waitReady(t, hidden)
	waitReachability(t, hidden, ReachRelayed, true)
}

// TestNode_AnnounceAddrs: --announce-p2p replaces the advertised listen
// addresses.
func TestNode_AnnounceAddrs(t *testing.T) {
	n := startNode(t, func(c *Config) {
		c.AnnounceAddrs = []string{"/ip4/198.51.100.7/tcp/4001", "/dns4/node.example.org/tcp/4001"}
	})
	require.Equal(t, []string{"/ip4/198.51.100.7/tcp/4001/p2p/" + n.ID().String(), "/dns4/node.example.org/tcp/4001/p2p/" + n.ID().String()},
		addrStrings(n))
	r, _ := n.Reachability()
	require.Equal(t, ReachDirect, r)

	for _, bad := range []string{"/ip4/198.51.100.7/tcp/4001/p2p/12D3KooWCZ67PtTeGdHWHRvrqTwQpd5ovNHPaXn4ZADzUdaGtnyr", "/ip4/198.51.100.7/udp/4001", "nope"} {
		cfg := DefaultConfig()
		cfg.AnnounceAddrs = []string{bad}
		require.ErrorIs(t, cfg.Validate(), ErrBadConfig, bad)
	}
}
