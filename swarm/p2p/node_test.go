package p2p

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/stretchr/testify/require"
)

// testTimeout bounds every wait of these loopback tests (generous for -race
// on a loaded 2-core machine; a healthy run takes well under a second per wait).
const testTimeout = 30 * time.Second

func fastBackoff() backoff.BackoffFactory {
	return backoff.NewExponentialBackoff(50*time.Millisecond, 400*time.Millisecond, backoff.NoJitter,
		50*time.Millisecond, 2, 0, rand.NewSource(1))
}

// startNode starts a loopback node and closes it when the test ends.
func startNode(t *testing.T, mod func(*Config), opts ...Option) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	if mod != nil {
		mod(&cfg)
	}
	opts = append([]Option{
		WithBootstrapBackoff(fastBackoff()),
		WithDiscovery(DefaultRendezvous, DefaultTargetPeers, time.Second),
		WithDialTimeout(5 * time.Second),
	}, opts...)
	n, err := New(cfg, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

func addrStrings(n *Node) []string {
	var s []string
	for _, a := range n.Addrs() {
		s = append(s, a.String())
	}
	return s
}

// waitConnected waits for an event saying a is connected to b.
func waitConnected(t *testing.T, a, b *Node) {
	t.Helper()
	sub, err := a.Host().EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
	require.NoError(t, err)
	defer sub.Close()
	if a.Host().Network().Connectedness(b.ID()) == network.Connected {
		return
	}
	deadline := time.After(testTimeout)
	for {
		select {
		case ev := <-sub.Out():
			e := ev.(event.EvtPeerConnectednessChanged)
			if e.Peer == b.ID() && e.Connectedness == network.Connected {
				return
			}
		case <-deadline:
			t.Fatalf("%s never connected to %s", a.ID(), b.ID())
		}
	}
}

func waitReady(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	require.NoError(t, n.WaitReady(ctx))
}

// TestNodes_DiscoverPeersBeyondBootstrap starts a bootstrap node and three
// nodes that know only it; through the DHT rendezvous each of them must
// connect to the other two.
func TestNodes_DiscoverPeersBeyondBootstrap(t *testing.T) {
	boot := startNode(t, nil)
	waitReady(t, boot)
	var nodes []*Node
	for range 3 {
		n := startNode(t, func(c *Config) { c.Bootstrap = addrStrings(boot) })
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		waitReady(t, n)
	}
	for i, a := range nodes {
		for j, b := range nodes {
			if i != j {
				waitConnected(t, a, b)
			}
		}
	}
}

// freeTCPPort returns a loopback TCP port that was free a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// TestNode_BootstrapPeerComesUpLater starts a node whose only bootstrap peer
// is not listening yet: it must stay not-ready, keep retrying with back-off,
// and become ready once the peer starts.
func TestNode_BootstrapPeerComesUpLater(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(nil)
	require.NoError(t, err)
	id, err := peer.IDFromPrivateKey(key)
	require.NoError(t, err)
	port := freeTCPPort(t)
	bootAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", port, id)

	n := startNode(t, func(c *Config) { c.Bootstrap = []string{bootAddr} })
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, n.WaitReady(ctx), context.DeadlineExceeded, "ready without a reachable bootstrap peer")

	boot := startNode(t, func(c *Config) { c.ListenAddrs = []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port)} },
		WithPrivateKey(key))
	waitReady(t, n)
	require.Equal(t, network.Connected, n.Host().Network().Connectedness(boot.ID()))
}

// TestNode_QUIC joins a node through a QUIC-only bootstrap peer.
func TestNode_QUIC(t *testing.T) {
	boot := startNode(t, func(c *Config) { c.ListenAddrs = []string{"/ip4/127.0.0.1/udp/0/quic-v1"} })
	require.Contains(t, addrStrings(boot)[0], "/quic-v1/p2p/")
	n := startNode(t, func(c *Config) {
		c.ListenAddrs = []string{"/ip4/127.0.0.1/udp/0/quic-v1"}
		c.Bootstrap = addrStrings(boot)
	})
	waitReady(t, n)
	conns := n.Host().Network().ConnsToPeer(boot.ID())
	require.NotEmpty(t, conns)
	require.Contains(t, conns[0].RemoteMultiaddr().String(), "quic-v1")
}

// TestNode_PrivateNetwork checks swarm admission by pre-shared key: members
// with the same key connect; a node without it, or with another key, cannot.
func TestNode_PrivateNetwork(t *testing.T) {
	dir := t.TempDir()
	key1, key2 := filepath.Join(dir, "a.key"), filepath.Join(dir, "b.key")
	require.NoError(t, WriteNewSwarmKey(key1))
	require.NoError(t, WriteNewSwarmKey(key2))

	boot := startNode(t, func(c *Config) { c.SwarmKeyFile = key1 })
	require.True(t, boot.Private())
	member := startNode(t, func(c *Config) { c.SwarmKeyFile = key1; c.Bootstrap = addrStrings(boot) })
	waitReady(t, member)

	bootInfo := peer.AddrInfo{ID: boot.ID(), Addrs: boot.Host().Addrs()}
	for name, mod := range map[string]func(*Config){
		"no key":    nil,
		"other key": func(c *Config) { c.SwarmKeyFile = key2 },
	} {
		t.Run(name, func(t *testing.T) {
			outsider := startNode(t, mod)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			require.Error(t, outsider.Host().Connect(ctx, bootInfo))
			require.NotEqual(t, network.Connected, boot.Host().Network().Connectedness(outsider.ID()))
		})
	}
}

// TestNode_IdentityFileFixesPeerID restarts a node on the same identity file
// and checks it keeps its peer id.
func TestNode_IdentityFileFixesPeerID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "id.key")
	cfg := DefaultConfig()
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.IdentityFile = path
	n1, err := New(cfg)
	require.NoError(t, err)
	id1 := n1.ID()
	require.NoError(t, n1.Close())
	require.NoError(t, n1.Close(), "Close is idempotent")
	n2, err := New(cfg)
	require.NoError(t, err)
	defer n2.Close()
	require.Equal(t, id1, n2.ID())
	want, err := PeerIDFromKey(n2.PrivateKey())
	require.NoError(t, err)
	require.Equal(t, id1, want)
}

func TestNew_BadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.key")
	require.NoError(t, writeFileExclusive(bad, []byte("garbage")))
	tests := []struct {
		name string
		mod  func(*Config)
		want error
	}{
		{"bad listen", func(c *Config) { c.ListenAddrs = []string{"nope"} }, ErrBadConfig},
		{"bad identity", func(c *Config) { c.IdentityFile = bad }, ErrBadIdentity},
		{"missing swarm key", func(c *Config) { c.SwarmKeyFile = filepath.Join(dir, "none") }, ErrBadSwarmKey},
		{"garbage swarm key", func(c *Config) { c.SwarmKeyFile = bad }, ErrBadSwarmKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
			tt.mod(&cfg)
			_, err := New(cfg)
			require.ErrorIs(t, err, tt.want)
		})
	}
	_, err := New(DefaultConfig(), WithDiscovery("", 1, time.Second))
	require.ErrorIs(t, err, ErrBadConfig)
}

// TestNode_CircuitRelay has a node that cannot be dialled (it listens on no
// address, and believes it is behind a NAT) reserve a slot on a relay
// (--relay-service) and be reached through it by a node that knows only the
// relay's address. (libp2p advertises circuit addresses only for relays
// with public addresses, so on loopback the test forms the /p2p-circuit
// address itself.)
func TestNode_CircuitRelay(t *testing.T) {
	relay := startNode(t, func(c *Config) { c.RelayService = true })
	hidden := startNode(t, func(c *Config) { c.Bootstrap = addrStrings(relay) },
		WithLibp2pOptions(libp2p.ForceReachabilityPrivate(), libp2p.NoListenAddrs))
	waitReady(t, hidden)
	circuit, err := ma.NewMultiaddr(addrStrings(relay)[0] + "/p2p-circuit")
	require.NoError(t, err)

	// Record every connection the hidden node gets (notifications are not
	// coalesced, unlike connectedness events).
	conns := make(chan string, 16)
	hidden.Host().Network().Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		select {
		case conns <- c.RemotePeer().String() + " " + c.RemoteMultiaddr().String():
		default:
		}
	}})

	// The dialer is a DHT client: it does not advertise itself, so the
	// hidden node cannot find and dial it directly.
	dialer := startNode(t, func(c *Config) { c.DHTMode = DHTModeClient })
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	// The dial fails until the hidden node holds a reservation (its relay
	// finder runs every 2 s).
	var lastErr error
	err = retryWithBackoff(ctx, fastBackoff()(), func(ctx context.Context) bool {
		lastErr = dialer.Host().Connect(ctx, peer.AddrInfo{ID: hidden.ID(), Addrs: []ma.Multiaddr{circuit}})
		return lastErr == nil
	})
	require.NoError(t, err, "never reached the hidden node through the relay: %v", lastErr)
	// The first connection from the dialer is the relayed one; hole
	// punching may add a direct one afterwards.
	for {
		select {
		case c := <-conns:
			if !strings.HasPrefix(c, dialer.ID().String()) {
				continue
			}
			require.Contains(t, c, "/p2p/"+relay.ID().String()+"/p2p-circuit", "the first connection goes through the relay")
			return
		case <-ctx.Done():
			t.Fatal("the hidden node saw no connection from the dialer")
		}
	}
}
