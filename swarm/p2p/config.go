package p2p

import (
	"fmt"
	"strings"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/spf13/pflag"
)

// DHT modes accepted by Config.DHTMode (--dht-mode).
const (
	// DHTModeServer answers DHT queries and advertises the node at the
	// rendezvous: for servers that others can dial.
	DHTModeServer = "server"
	// DHTModeClient only queries the DHT and does not advertise the node: for
	// clients and short-lived tools such as `swarm status`.
	DHTModeClient = "client"
	// DHTModeAuto starts as a server and becomes a client when AutoNAT finds
	// the node unreachable from outside (behind a NAT).
	DHTModeAuto = "auto"
)

// DefaultListenAddrs are the listen addresses used when Config.ListenAddrs is
// empty: TCP and QUIC on all IPv4 and IPv6 interfaces, on random ports.
var DefaultListenAddrs = []string{
	"/ip4/0.0.0.0/tcp/0",
	"/ip4/0.0.0.0/udp/0/quic-v1",
	"/ip6/::/tcp/0",
	"/ip6/::/udp/0/quic-v1",
}

// Config holds the common node flags; each field maps one-to-one to a flag
// registered by AddFlags. The zero value is not valid: start from
// DefaultConfig.
type Config struct {
	// ListenAddrs are the multiaddrs to listen on (--p2p-listen, repeatable),
	// e.g. /ip4/0.0.0.0/tcp/4001 or /ip4/0.0.0.0/udp/4001/quic-v1. Empty means
	// DefaultListenAddrs (only their TCP ones when SwarmKeyFile is set).
	ListenAddrs []string
	// IdentityFile is the node's private key file (--identity); it is created
	// (Ed25519, mode 0600) on first use. Empty means a fresh key each run, so
	// the peer id changes on every restart.
	IdentityFile string
	// Bootstrap are the multiaddrs of peers to join through (--bootstrap,
	// repeatable), each ending in /p2p/PEERID. Empty makes this node the first
	// of a new swarm.
	Bootstrap []string
	// SwarmKeyFile is a pre-shared key in the /key/swarm/psk/1.0.0/ format
	// (--swarm-key); when set only nodes with the same key can connect, and
	// only TCP is used because libp2p's QUIC does not support private networks.
	SwarmKeyFile string
	// DHTMode is DHTModeServer, DHTModeClient or DHTModeAuto (--dht-mode).
	DHTMode string
	// RelayService makes this node a circuit relay v2 for peers behind NAT
	// (--relay-service); enable it on publicly reachable nodes only (the
	// node then considers itself publicly reachable).
	RelayService bool
	// RelayMaxBytes and RelayMaxDuration bound each connection this node
	// relays (--relay-max-bytes, in bytes each way, and
	// --relay-max-duration); the relay resets it beyond them. libp2p's
	// defaults, 128 KiB and 2 minutes, suit signalling (hole punching)
	// but only short sessions of small models over /swarm/inference/1: a
	// token of a model with d_model 4096 is 16 KiB of fp32 hidden states
	// each way. Both must be > 0.
	RelayMaxBytes    int64
	RelayMaxDuration time.Duration
	// AnnounceAddrs are multiaddrs to advertise instead of the listen
	// addresses (--announce-p2p, repeatable), e.g.
	// /ip4/203.0.113.7/tcp/4001 for a node listening on
	// /ip4/0.0.0.0/tcp/4001 behind a port forward; without /p2p/ (the
	// node adds its id). Empty: the listen addresses libp2p observes.
	AnnounceAddrs []string
	// NATPortMap asks the home router for a port mapping with UPnP or NAT-PMP
	// (--nat-portmap).
	NATPortMap bool
}

// DefaultConfig returns the defaults: listen on DefaultListenAddrs, an
// ephemeral identity, no bootstrap peers, no swarm key, DHT server mode,
// no relay service, no NAT port mapping.
func DefaultConfig() Config {
	return Config{DHTMode: DHTModeServer, RelayMaxBytes: DefaultRelayMaxBytes, RelayMaxDuration: DefaultRelayMaxDuration}
}

// Defaults of the relay limits: libp2p's circuit relay v2 defaults
// (relay.DefaultLimit).
const (
	DefaultRelayMaxBytes    = 1 << 17
	DefaultRelayMaxDuration = 2 * time.Minute
)

// AddFlags registers the node flags on fs (e.g. cmd.Flags() of a cobra
// command), with c's current values as defaults, binding them to c's fields.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.ListenAddrs, "p2p-listen", c.ListenAddrs,
		"libp2p multiaddr to listen on, repeatable or comma-separated, e.g. /ip4/0.0.0.0/tcp/4001 or /ip4/0.0.0.0/udp/4001/quic-v1\n"+
			"(default: TCP and QUIC on all interfaces, random ports; TCP only with --swarm-key)")
	fs.StringVar(&c.IdentityFile, "identity", c.IdentityFile,
		"file holding this node's private key (libp2p protobuf encoding), created with mode 0600 if missing;\n"+
			"the key fixes the peer id. Empty: a fresh key and peer id on every run")
	fs.StringSliceVar(&c.Bootstrap, "bootstrap", c.Bootstrap,
		"multiaddr of a peer to join the swarm through, ending in /p2p/PEERID (swarm identity prints it),\n"+
			"or /dnsaddr/DOMAIN (peers from the TXT records of _dnsaddr.DOMAIN), repeatable or comma-separated,\n"+
			"e.g. /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW...; default $SWARM_BOOTSTRAP; unreachable peers are retried\n"+
			"with exponential back-off, with a warning when one stays unreachable. Empty: start a new swarm")
	fs.StringVar(&c.SwarmKeyFile, "swarm-key", c.SwarmKeyFile,
		"pre-shared key file (/key/swarm/psk/1.0.0/ format) admitting only nodes with the same key (libp2p\n"+
			"private network). QUIC does not support private networks, so with a key only TCP is used")
	fs.StringVar(&c.DHTMode, "dht-mode", c.DHTMode,
		"Kademlia DHT mode: server (answer queries and advertise this node), client (query only; for\n"+
			"clients and nodes that cannot be dialled) or auto (server until AutoNAT finds the node behind a NAT)")
	fs.BoolVar(&c.RelayService, "relay-service", c.RelayService,
		"act as a circuit relay for peers behind NAT (enable on publicly reachable nodes only)")
	fs.Int64Var(&c.RelayMaxBytes, "relay-max-bytes", c.RelayMaxBytes,
		"with --relay-service: bytes relayed each way per connection before the relay resets it (sessions over\n"+
			"a relayed /swarm/inference/1 stream carry 2 x d_model x 4 bytes per token with f32 hidden states)")
	fs.DurationVar(&c.RelayMaxDuration, "relay-max-duration", c.RelayMaxDuration,
		"with --relay-service: how long a relayed connection may last before the relay resets it")
	fs.StringSliceVar(&c.AnnounceAddrs, "announce-p2p", c.AnnounceAddrs,
		"libp2p multiaddr to advertise instead of the listen addresses, repeatable or comma-separated, e.g.\n"+
			"/ip4/203.0.113.7/tcp/4001 or /dns4/node.example.org/tcp/4001 (for a node behind a port forward); without /p2p/")
	fs.BoolVar(&c.NATPortMap, "nat-portmap", c.NATPortMap,
		"ask the local router for a port mapping (UPnP / NAT-PMP)")
}

// Validate checks every field without touching files and returns an error
// wrapping ErrBadConfig naming the first bad one.
func (c Config) Validate() error {
	if _, err := c.listenMultiaddrs(); err != nil {
		return err
	}
	if _, err := c.BootstrapPeers(); err != nil {
		return err
	}
	if _, err := c.dhtMode(); err != nil {
		return err
	}
	if _, err := c.announceMultiaddrs(); err != nil {
		return err
	}
	if c.RelayService && (c.RelayMaxBytes <= 0 || c.RelayMaxDuration <= 0) {
		return fmt.Errorf("%w: --relay-max-bytes %d and --relay-max-duration %v, want both > 0",
			ErrBadConfig, c.RelayMaxBytes, c.RelayMaxDuration)
	}
	return nil
}

// listenMultiaddrs parses ListenAddrs (or the defaults) and checks each uses
// a transport this node runs.
func (c Config) listenMultiaddrs() ([]ma.Multiaddr, error) {
	texts := c.ListenAddrs
	if len(texts) == 0 {
		for _, a := range DefaultListenAddrs {
			if c.SwarmKeyFile != "" && strings.Contains(a, "/quic") {
				continue
			}
			texts = append(texts, a)
		}
	}
	addrs := make([]ma.Multiaddr, 0, len(texts))
	for _, text := range texts {
		a, err := ma.NewMultiaddr(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("%w: --p2p-listen %q is not a multiaddr (%w); want e.g. /ip4/0.0.0.0/tcp/4001",
				ErrBadConfig, text, err)
		}
		_, tcpErr := a.ValueForProtocol(ma.P_TCP)
		_, quicErr := a.ValueForProtocol(ma.P_QUIC_V1)
		switch {
		case quicErr == nil && c.SwarmKeyFile != "":
			return nil, fmt.Errorf("%w: --p2p-listen %q is QUIC, which libp2p does not support with --swarm-key (a private network); listen on /tcp only",
				ErrBadConfig, text)
		case tcpErr != nil && quicErr != nil:
			return nil, fmt.Errorf("%w: --p2p-listen %q uses neither tcp nor quic-v1; want e.g. /ip4/0.0.0.0/tcp/4001 or /ip4/0.0.0.0/udp/4001/quic-v1",
				ErrBadConfig, text)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// announceMultiaddrs parses AnnounceAddrs; each must be a tcp or quic-v1
// address without /p2p/.
func (c Config) announceMultiaddrs() ([]ma.Multiaddr, error) {
	var out []ma.Multiaddr
	for _, text := range c.AnnounceAddrs {
		a, err := ma.NewMultiaddr(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("%w: --announce-p2p %q is not a multiaddr (%w); want e.g. /ip4/203.0.113.7/tcp/4001",
				ErrBadConfig, text, err)
		}
		if _, err := a.ValueForProtocol(ma.P_P2P); err == nil {
			return nil, fmt.Errorf("%w: --announce-p2p %q ends in /p2p/: give the address only (the node adds its own id)", ErrBadConfig, text)
		}
		_, tcpErr := a.ValueForProtocol(ma.P_TCP)
		_, quicErr := a.ValueForProtocol(ma.P_QUIC_V1)
		if tcpErr != nil && quicErr != nil {
			return nil, fmt.Errorf("%w: --announce-p2p %q uses neither tcp nor quic-v1; want e.g. /ip4/203.0.113.7/tcp/4001", ErrBadConfig, text)
		}
		out = append(out, a)
	}
	return out, nil
}

// BootstrapPeers parses Bootstrap into peer infos, merging addresses of the
// same peer. Each address must end in /p2p/PEERID, except /dnsaddr/DOMAIN
// addresses, whose peers are found in DNS TXT records (_dnsaddr.DOMAIN)
// when the node dials them: those are left out here (see bootstrapDNS).
func (c Config) BootstrapPeers() ([]peer.AddrInfo, error) {
	infos, _, err := c.bootstrapTargets()
	return infos, err
}

// bootstrapTargets parses Bootstrap: peers with a known id, and /dnsaddr
// addresses without one (resolved at each dial round).
func (c Config) bootstrapTargets() ([]peer.AddrInfo, []ma.Multiaddr, error) {
	addrs := make([]ma.Multiaddr, 0, len(c.Bootstrap))
	var dns []ma.Multiaddr
	for _, text := range c.Bootstrap {
		a, err := ma.NewMultiaddr(strings.TrimSpace(text))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --bootstrap %q is not a multiaddr (%w); want e.g. /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW... or /dnsaddr/bootstrap.example.org",
				ErrBadConfig, text, err)
		}
		if _, err := peer.AddrInfoFromP2pAddr(a); err != nil {
			if _, dnsErr := a.ValueForProtocol(ma.P_DNSADDR); dnsErr == nil {
				dns = append(dns, a)
				continue
			}
			return nil, nil, fmt.Errorf("%w: --bootstrap %q: %w; the address must end in /p2p/PEERID (`swarm identity` prints the peer id), or be /dnsaddr/DOMAIN",
				ErrBadConfig, text, err)
		}
		addrs = append(addrs, a)
	}
	infos, err := peer.AddrInfosFromP2pAddrs(addrs...)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: --bootstrap: %w", ErrBadConfig, err)
	}
	return infos, dns, nil
}

// dhtMode maps DHTMode to the kad-dht option value.
func (c Config) dhtMode() (dht.ModeOpt, error) {
	switch c.DHTMode {
	case DHTModeServer:
		return dht.ModeServer, nil
	case DHTModeClient:
		return dht.ModeClient, nil
	case DHTModeAuto:
		return dht.ModeAutoServer, nil
	}
	return 0, fmt.Errorf("%w: --dht-mode %q, want server, client or auto", ErrBadConfig, c.DHTMode)
}
