package p2p

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	madns "github.com/multiformats/go-multiaddr-dns"
)

// Defaults of the programmatic options (those that are not flags).
const (
	// DefaultRendezvous is the DHT namespace every swarm node advertises
	// itself under and looks others up by.
	DefaultRendezvous = "swarm/nodes/1"
	// DefaultTargetPeers is how many connections discovery tops the node up
	// to; GossipSub wants a mesh of about 6 (its D parameter).
	DefaultTargetPeers = 8
	// DefaultDiscoveryInterval is the longest pause between rendezvous
	// lookups; the pauses start at one second and double up to it.
	DefaultDiscoveryInterval = 30 * time.Second
	// DefaultBackoffMin and DefaultBackoffMax bound the pause between
	// rounds of bootstrap dials: 1 s, 2 s, 4 s, ... capped at 1 minute.
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = time.Minute
	// DefaultDialTimeout bounds one dial of one bootstrap or discovered peer.
	DefaultDialTimeout = 10 * time.Second
	// DefaultBootstrapWarnAfter is how long a bootstrap peer may stay
	// unreachable before the node warns (once per outage).
	DefaultBootstrapWarnAfter = 2 * time.Minute
)

// ProtocolPrefix is the prefix of the swarm's private Kademlia DHT protocols
// (/swarm/kad/1.0.0), so that swarm nodes never join the public IPFS DHT.
const ProtocolPrefix = "/swarm"

// Option configures New. Options validate their arguments.
type Option func(*options) error

type options struct {
	key               crypto.PrivKey
	logger            *slog.Logger
	backoff           backoff.BackoffFactory
	rendezvous        string
	targetPeers       int
	discoveryInterval time.Duration
	dialTimeout       time.Duration
	// bootstrapWarnAfter: see DefaultBootstrapWarnAfter.
	bootstrapWarnAfter time.Duration
	// resolver resolves /dnsaddr bootstrap addresses.
	resolver *madns.Resolver
	extra    []libp2p.Option
}

func defaultOptions() options {
	return options{
		logger: slog.New(slog.DiscardHandler),
		backoff: backoff.NewExponentialBackoff(DefaultBackoffMin, DefaultBackoffMax, backoff.FullJitter,
			DefaultBackoffMin, 2, 0, rand.NewSource(time.Now().UnixNano())),
		rendezvous:         DefaultRendezvous,
		targetPeers:        DefaultTargetPeers,
		discoveryInterval:  DefaultDiscoveryInterval,
		dialTimeout:        DefaultDialTimeout,
		bootstrapWarnAfter: DefaultBootstrapWarnAfter,
		resolver:           madns.DefaultResolver,
	}
}

// WithPrivateKey uses key as the node identity instead of Config.IdentityFile
// (for in-process nodes in tests and benchmarks).
func WithPrivateKey(key crypto.PrivKey) Option {
	return func(o *options) error {
		if key == nil {
			return errors.New("p2p: WithPrivateKey: nil key")
		}
		o.key = key
		return nil
	}
}

// WithLogger sends the node's log lines to l (default: discarded).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("p2p: WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithBootstrapBackoff sets the pauses between rounds of bootstrap dials
// (default: exponential 1 s to 1 min with full jitter); see the libp2p
// discovery/backoff package for strategies.
func WithBootstrapBackoff(f backoff.BackoffFactory) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("p2p: WithBootstrapBackoff: nil factory")
		}
		o.backoff = f
		return nil
	}
}

// WithDiscovery sets the rendezvous namespace, the number of connections
// discovery tops up to, and the longest pause between lookups (defaults
// DefaultRendezvous, DefaultTargetPeers, DefaultDiscoveryInterval).
func WithDiscovery(rendezvous string, targetPeers int, interval time.Duration) Option {
	return func(o *options) error {
		switch {
		case rendezvous == "":
			return errors.New("p2p: WithDiscovery: empty rendezvous namespace")
		case targetPeers < 1:
			return fmt.Errorf("p2p: WithDiscovery: targetPeers = %d, want >= 1", targetPeers)
		case interval < time.Second:
			return fmt.Errorf("p2p: WithDiscovery: interval = %v, want >= 1s", interval)
		}
		o.rendezvous, o.targetPeers, o.discoveryInterval = rendezvous, targetPeers, interval
		return nil
	}
}

// WithDialTimeout bounds each dial of a bootstrap or discovered peer
// (default DefaultDialTimeout).
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("p2p: WithDialTimeout: %v, want > 0", d)
		}
		o.dialTimeout = d
		return nil
	}
}

// WithBootstrapWarnAfter sets how long a bootstrap peer may stay
// unreachable before the node logs a warning with advice (default
// DefaultBootstrapWarnAfter); 0 warns at the first failed round.
func WithBootstrapWarnAfter(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("p2p: WithBootstrapWarnAfter: %v, want >= 0", d)
		}
		o.bootstrapWarnAfter = d
		return nil
	}
}

// WithDNSResolver resolves /dnsaddr bootstrap addresses with r (default
// madns.DefaultResolver, the system's DNS; tests pass one backed by a
// madns.MockResolver).
func WithDNSResolver(r *madns.Resolver) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("p2p: WithDNSResolver: nil resolver")
		}
		o.resolver = r
		return nil
	}
}

// WithLibp2pOptions appends raw go-libp2p options after the ones New derives
// from the Config (for tests, e.g. a resource manager).
func WithLibp2pOptions(opts ...libp2p.Option) Option {
	return func(o *options) error {
		o.extra = append(o.extra, opts...)
		return nil
	}
}
