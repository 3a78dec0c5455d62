package p2p

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/libp2p/go-libp2p/core/routing"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// Node is one member of the swarm's node network: a libp2p host, its DHT,
// and the goroutines that keep it connected (bootstrap with back-off,
// rendezvous discovery). It is safe for concurrent use. Close stops every
// goroutine it started and waits for them.
type Node struct {
	host      host.Host
	dht       *dht.IpfsDHT
	disc      *drouting.RoutingDiscovery
	opts      options
	bootstrap []peer.AddrInfo
	// bootstrapDNS are /dnsaddr bootstrap addresses without a peer id,
	// resolved at every dial round.
	bootstrapDNS []ma.Multiaddr
	advertise    bool
	private      bool
	peerEvents   event.Subscription
	isolated     chan struct{} // signalled by watchPeers when the last connection closed
	reach        reachWatch    // AutoNAT's verdict and the relay addresses (watchReachability)

	ready     chan struct{} // closed once a bootstrap peer answered (at once without bootstrap peers)
	readyOnce sync.Once

	ctx    context.Context // cancelled by Close; parent of every goroutine's work
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines started by New and AdvertiseAt
	// startMu orders wg.Add in AdvertiseAt before Close's cancel and Wait.
	startMu sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

// New starts a node: it loads (or creates) the identity, reads the swarm key,
// listens, starts the DHT, and in the background dials the bootstrap peers
// with exponential back-off and then tops up its connections from the DHT
// rendezvous. It returns as soon as the host listens; Ready reports when a
// bootstrap peer has answered.
//
// Errors wrap ErrBadConfig, ErrBadIdentity or ErrBadSwarmKey for bad input.
func New(cfg Config, opts ...Option) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
	}
	key := o.key
	if key == nil {
		var err error
		key, err = loadKey(cfg.IdentityFile)
		if err != nil {
			return nil, err
		}
	}
	var psk pnet.PSK
	if cfg.SwarmKeyFile != "" {
		var err error
		if psk, err = LoadSwarmKey(cfg.SwarmKeyFile); err != nil {
			return nil, err
		}
	}
	listen, err := cfg.listenMultiaddrs()
	if err != nil {
		return nil, err
	}
	mode, err := cfg.dhtMode()
	if err != nil {
		return nil, err
	}
	boot, bootDNS, err := cfg.bootstrapTargets()
	if err != nil {
		return nil, err
	}

	n := &Node{
		opts:         o,
		bootstrap:    boot,
		bootstrapDNS: bootDNS,
		advertise:    cfg.DHTMode != DHTModeClient,
		private:      psk != nil,
		ready:        make(chan struct{}),
		isolated:     make(chan struct{}, 1),
		reach:        reachWatch{changed: make(chan struct{}, 1)},
	}
	var hostRef atomic.Pointer[host.Host] // read by the relay peer source, set after libp2p.New
	lopts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.ListenAddrs(listen...),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.EnableRelay(),
		libp2p.EnableHolePunching(),
		// A swarm has few relays (its public nodes), so reserve with the
		// first candidate at once rather than waiting for four (the
		// libp2p defaults suit the public IPFS network).
		libp2p.EnableAutoRelayWithPeerSource(func(ctx context.Context, num int) <-chan peer.AddrInfo {
			return relayCandidates(hostRef.Load(), num)
		}, autorelay.WithMinCandidates(1), autorelay.WithBootDelay(0), autorelay.WithMinInterval(2*time.Second),
			autorelay.WithBackoff(time.Minute)),
		libp2p.Routing(func(h host.Host) (routing.PeerRouting, error) {
			d, err := dht.New(h, dht.Mode(mode), dht.ProtocolPrefix(ProtocolPrefix))
			n.dht = d
			return d, err
		}),
	}
	if psk == nil {
		lopts = append(lopts, libp2p.Transport(libp2pquic.NewTransport))
	} else {
		lopts = append(lopts, libp2p.PrivateNetwork(psk))
	}
	if cfg.RelayService {
		// The operator vouches that the node is publicly reachable; libp2p
		// would otherwise start the relay only once AutoNAT agrees.
		res := relay.DefaultResources()
		res.Limit = &relay.RelayLimit{Duration: cfg.RelayMaxDuration, Data: cfg.RelayMaxBytes}
		lopts = append(lopts, libp2p.EnableRelayService(relay.WithResources(res)), libp2p.ForceReachabilityPublic())
	}
	if cfg.NATPortMap {
		lopts = append(lopts, libp2p.NATPortMap())
	}
	if announce, err := cfg.announceMultiaddrs(); err != nil {
		return nil, err
	} else if len(announce) > 0 {
		// The operator's addresses replace the listen addresses (e.g.
		// 0.0.0.0 behind a port forward); relay circuits stay.
		lopts = append(lopts, libp2p.AddrsFactory(func(addrs []ma.Multiaddr) []ma.Multiaddr {
			out := append([]ma.Multiaddr(nil), announce...)
			for _, a := range addrs {
				if isCircuit(a) {
					out = append(out, a)
				}
			}
			return out
		}))
	}
	lopts = append(lopts, o.extra...)
	h, err := libp2p.New(lopts...)
	if err != nil {
		if n.dht != nil {
			err = errors.Join(err, n.dht.Close())
		}
		return nil, fmt.Errorf("p2p: start libp2p host: %w", err)
	}
	hostRef.Store(&h)
	n.host = h
	n.disc = drouting.NewRoutingDiscovery(n.dht)
	n.peerEvents, err = h.EventBus().Subscribe(new(event.EvtPeerConnectednessChanged), eventbus.BufSize(256))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("p2p: subscribe to peer events: %w", err), n.dht.Close(), h.Close())
	}
	reachSub, err := h.EventBus().Subscribe([]any{new(event.EvtLocalReachabilityChanged), new(event.EvtAutoRelayAddrsUpdated),
		new(event.EvtPeerIdentificationCompleted), new(event.EvtPeerConnectednessChanged)}, eventbus.BufSize(64))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("p2p: subscribe to reachability events: %w", err), n.peerEvents.Close(), n.dht.Close(), h.Close())
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(4)
	go n.watchPeers()
	go n.watchReachability(reachSub)
	go n.runBootstrap()
	go n.runDiscovery()
	o.logger.Info("p2p node started", "id", h.ID(), "addrs", hostAddrs(h), "bootstrap", len(boot), "private", n.private)
	return n, nil
}

// hostAddrs are h's listen addresses without the /p2p/ID suffix, for a log
// line that names the id once.
func hostAddrs(h host.Host) string {
	out := make([]string, 0, len(h.Addrs()))
	for _, a := range h.Addrs() {
		out = append(out, a.String())
	}
	return strings.Join(out, " ")
}

// loadKey returns the identity key from file, or a fresh Ed25519 key when
// file is empty.
func loadKey(file string) (crypto.PrivKey, error) {
	if file == "" {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("p2p: generate ephemeral key: %w", err)
		}
		return key, nil
	}
	key, _, err := LoadOrCreateIdentity(file)
	return key, err
}

// relayCandidates offers up to num connected peers as circuit relay
// candidates to AutoRelay, which keeps those that run the relay protocol.
func relayCandidates(hp *host.Host, num int) <-chan peer.AddrInfo {
	ch := make(chan peer.AddrInfo, max(num, 0))
	defer close(ch)
	if hp == nil {
		return ch
	}
	h := *hp
	for _, p := range h.Network().Peers() {
		if len(ch) == cap(ch) {
			break
		}
		ch <- h.Peerstore().PeerInfo(p)
	}
	return ch
}

// Host returns the libp2p host, for protocols built on the node network
// (the registry's gossip and anti-entropy, the /swarm/inference/1 stream).
func (n *Node) Host() host.Host { return n.host }

// DHT returns the node's Kademlia DHT.
func (n *Node) DHT() *dht.IpfsDHT { return n.dht }

// ID returns the node's peer id.
func (n *Node) ID() peer.ID { return n.host.ID() }

// PrivateKey returns the node's identity key (the registry signs its entries
// with it).
func (n *Node) PrivateKey() crypto.PrivKey { return n.host.Peerstore().PrivKey(n.host.ID()) }

// Private reports whether the node runs in a private network (--swarm-key).
func (n *Node) Private() bool { return n.private }

// Addrs returns the node's listen addresses with /p2p/PEERID appended: the
// strings other nodes pass to --bootstrap.
func (n *Node) Addrs() []ma.Multiaddr {
	addrs, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: n.host.ID(), Addrs: n.host.Addrs()})
	if err != nil {
		return nil
	}
	return addrs
}

// Ready is closed once the node has connected to one of its bootstrap peers,
// or at once when it has none (it is the first node of a swarm).
func (n *Node) Ready() <-chan struct{} { return n.ready }

// WaitReady blocks until Ready is closed, ctx is done (its error is
// returned) or the node is closed (ErrClosed).
func (n *Node) WaitReady(ctx context.Context) error {
	select {
	case <-n.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("p2p: waiting for a bootstrap peer: %w", ctx.Err())
	case <-n.ctx.Done():
		return ErrClosed
	}
}

func (n *Node) markReady() { n.readyOnce.Do(func() { close(n.ready) }) }

// Close stops discovery and bootstrapping, waits for their goroutines, then
// closes the DHT and the host. It is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.startMu.Lock()
		n.cancel()
		n.startMu.Unlock()
		n.wg.Wait()
		n.closeErr = errors.Join(n.peerEvents.Close(), n.dht.Close(), n.host.Close())
	})
	return n.closeErr
}
