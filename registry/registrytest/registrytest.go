// Package registrytest holds what the registry's tests and the tests of the
// packages built on it share: deterministic node keys, registry timings for
// synctest's fake clock and for real loopback libp2p nodes, and loopback
// node configurations with fast bootstrap retries. Only tests import it.
//
// This package must never be imported by production code, and never
// imports server/, client/, node/ or cmd/.
package registrytest

import (
	"math/rand"
	randv2 "math/rand/v2"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// Key derives a deterministic Ed25519 key from name, so that node ids are
// stable across runs.
func Key(tb testing.TB, name string) crypto.PrivKey {
	tb.Helper()
	var seed [32]byte
	copy(seed[:], name)
	key, _, err := crypto.GenerateEd25519Key(randv2.NewChaCha8(seed))
	require.NoError(tb, err)
	return key
}

// ID is the peer id of Key(tb, name).
func ID(tb testing.TB, name string) string {
	tb.Helper()
	id, err := peer.IDFromPrivateKey(Key(tb, name))
	require.NoError(tb, err)
	return id.String()
}

// FakeClockConfig is a LAN-like registry timing for tests that run inside
// a testing/synctest bubble (heartbeat 1 s, SUSPECTED after 3 s, LEFT
// after 10 s, collected 20 s later).
func FakeClockConfig() registry.Config {
	return registry.Config{
		HeartbeatInterval:   time.Second,
		SuspectAfter:        3 * time.Second,
		LeftAfter:           10 * time.Second,
		Retention:           20 * time.Second,
		AntiEntropyInterval: 2 * time.Second,
		MaxClockSkew:        500 * time.Millisecond,
	}
}

// LoopbackConfig is a registry timing for real libp2p nodes on loopback
// that notices silence within seconds.
func LoopbackConfig() registry.Config {
	return registry.Config{
		HeartbeatInterval:   200 * time.Millisecond,
		SuspectAfter:        1500 * time.Millisecond,
		LeftAfter:           5 * time.Second,
		Retention:           time.Minute,
		AntiEntropyInterval: 300 * time.Millisecond,
		MaxClockSkew:        200 * time.Millisecond,
	}
}

// P2PConfig is a node listening on loopback TCP, bootstrapping from the
// addresses of boot (when not nil).
func P2PConfig(boot *p2p.Node) p2p.Config {
	cfg := p2p.DefaultConfig()
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	if boot != nil {
		for _, a := range boot.Addrs() {
			cfg.Bootstrap = append(cfg.Bootstrap, a.String())
		}
	}
	return cfg
}

// P2POptions retry the bootstrap peers quickly (50 ms doubling to 1 s, no
// jitter) and rediscover peers every second.
func P2POptions() []p2p.Option {
	return []p2p.Option{
		p2p.WithDiscovery(p2p.DefaultRendezvous, p2p.DefaultTargetPeers, time.Second),
		p2p.WithBootstrapBackoff(backoff.NewExponentialBackoff(50*time.Millisecond, time.Second, backoff.NoJitter,
			50*time.Millisecond, 2, 0, rand.NewSource(1))),
	}
}
