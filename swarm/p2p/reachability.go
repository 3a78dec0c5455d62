package p2p

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Reachability is a node's verdict on how other nodes reach it, advertised
// in swarm.ServerInfo.Reachability and shown by `swarm status`.
type Reachability string

// The verdicts.
const (
	// ReachDirect: other nodes can dial the node's own addresses. AutoNAT
	// confirmed it (public), or AutoNAT has no verdict yet and the node
	// has an address of its own that is not a relay circuit (AutoNAT needs
	// several peers able to dial back, so on a LAN or loopback it may
	// never decide; ReachabilityOf then reports confirmed false).
	ReachDirect Reachability = "direct"
	// ReachRelayed: AutoNAT found the node behind a NAT (or it listens on
	// nothing) and it holds a circuit relay v2 reservation: others reach it
	// through /p2p-circuit addresses (hole punching may upgrade them).
	ReachRelayed Reachability = "relayed"
	// ReachUnreachable: behind a NAT with no relay reservation (yet), or
	// listening on nothing: only its own outgoing connections work.
	// Advice: forward a port and pass --announce-p2p, or run a
	// --relay-service node the swarm can reach.
	ReachUnreachable Reachability = "unreachable"
)

// ReachabilityOf returns the verdict from AutoNAT's (autonat), whether
// the node is served by a circuit relay (viaRelay: it has relay circuit
// addresses, as the AutoRelay event gives them, or is connected to a peer
// running the relay v2 hop protocol, with which AutoRelay reserves a slot
// at once; libp2p advertises circuit addresses only for relays with public
// addresses, so on a LAN the connection is the only sign) and its listen
// addresses (listen: the host's own). confirmed is false when the verdict
// is a guess made before AutoNAT has spoken.
func ReachabilityOf(autonat network.Reachability, viaRelay bool, listen []ma.Multiaddr) (r Reachability, confirmed bool) {
	switch autonat {
	case network.ReachabilityPublic:
		return ReachDirect, true
	case network.ReachabilityPrivate:
		if viaRelay {
			return ReachRelayed, true
		}
		return ReachUnreachable, true
	}
	for _, a := range listen {
		if isCircuit(a) {
			continue
		}
		if ip, err := manet.ToIP(a); err == nil && !ip.IsUnspecified() {
			return ReachDirect, false
		}
	}
	if viaRelay {
		return ReachRelayed, false
	}
	return ReachUnreachable, false
}

func isCircuit(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// reachWatch follows AutoNAT's verdict and the AutoRelay circuit
// addresses from the host's event bus.
type reachWatch struct {
	mu sync.Mutex
	// Guarded by mu.
	autonatLocked network.Reachability
	relayLocked   []ma.Multiaddr
	// changed (1-buffered) is signalled on every change.
	changed chan struct{}
}

func (w *reachWatch) apply(ev any) {
	w.mu.Lock()
	switch e := ev.(type) {
	case event.EvtLocalReachabilityChanged:
		w.autonatLocked = e.Reachability
	case event.EvtAutoRelayAddrsUpdated:
		w.relayLocked = e.RelayAddrs
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// Reachability returns the node's current verdict (see ReachabilityOf) and
// whether AutoNAT confirmed it.
func (n *Node) Reachability() (Reachability, bool) {
	n.reach.mu.Lock()
	autonat, relays := n.reach.autonatLocked, n.reach.relayLocked
	n.reach.mu.Unlock()
	viaRelay := len(relays) > 0
	if autonat != network.ReachabilityPublic && !viaRelay {
		for _, p := range n.host.Network().Peers() {
			if ok, err := n.host.Peerstore().SupportsProtocols(p, proto.ProtoIDv2Hop); err == nil && len(ok) > 0 {
				viaRelay = true
				break
			}
		}
	}
	return ReachabilityOf(autonat, viaRelay, n.host.Addrs())
}

// ReachabilityChanged is signalled (coalesced) when AutoNAT's verdict or
// the node's relay addresses change; read Reachability then.
func (n *Node) ReachabilityChanged() <-chan struct{} { return n.reach.changed }

// watchReachability feeds reach from the host's reachability and relay
// address events, logging each new verdict, until the node closes.
func (n *Node) watchReachability(sub event.Subscription) {
	defer n.wg.Done()
	defer sub.Close()
	last := Reachability("")
	for {
		select {
		case <-n.ctx.Done():
			return
		case ev, ok := <-sub.Out():
			if !ok {
				return
			}
			n.reach.apply(ev)
			r, confirmed := n.Reachability()
			if r == last {
				continue
			}
			last = r
			if r == ReachUnreachable && confirmed {
				n.opts.logger.Warn("p2p: reachability: unreachable (AutoNAT: behind a NAT, no relay reservation); other nodes "+
					"cannot dial this node: forward a port and pass --announce-p2p, or reach a node running --relay-service",
					"reachability", string(r))
				continue
			}
			n.opts.logger.Info("p2p: reachability", "reachability", string(r), "confirmed_by_autonat", confirmed)
		}
	}
}
