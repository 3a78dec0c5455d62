package node

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/swarmllm/swarm/swarm/p2p"
)

// Bounds of the RTT measurement of a joining server.
const (
	// rttLookupTimeout bounds the rendezvous lookup of client nodes.
	rttLookupTimeout = 3 * time.Second
	// rttPingTimeout bounds the pings of one peer.
	rttPingTimeout = 3 * time.Second
	// rttPings is the number of pings per peer (the fastest counts).
	rttPings = 3
	// rttMaxPeers caps the peers pinged.
	rttMaxPeers = 16
)

// RTTSource says which peers a ClientRTT measurement pinged.
type RTTSource string

// Values of RTTSource.
const (
	// RTTFromClients: client and ingress nodes found at
	// p2p.ClientRendezvous.
	RTTFromClients RTTSource = "clients"
	// RTTFromBootstrap: no client node answered; the bootstrap peers
	// stand in for them (they are where clients enter the swarm in a
	// typical deployment, e.g. the ingress).
	RTTFromBootstrap RTTSource = "bootstrap peers"
	// RTTNone: nobody to ping (the first node of a swarm); t*_j = 0.
	RTTNone RTTSource = "none"
)

// ClientRTT measures t*_j = max_c t_cj (paper 003 eq. 14) for a joining
// server: the largest round trip time, in seconds, to the client and
// ingress nodes advertised at p2p.ClientRendezvous (up to 16 of them, each
// the fastest of 3 libp2p pings). When none answers it pings the bootstrap
// peers instead, and with neither it returns 0. The per-token RTT of the
// data plane is one request and one answer, as a ping is.
func ClientRTT(ctx context.Context, n *p2p.Node, bootstrap []peer.AddrInfo) (float64, RTTSource) {
	lctx, cancel := context.WithTimeout(ctx, rttLookupTimeout)
	clients, err := n.FindAt(lctx, p2p.ClientRendezvous, rttMaxPeers)
	cancel()
	if err == nil {
		if rtt, ok := maxPing(ctx, n, clients); ok {
			return rtt, RTTFromClients
		}
	}
	if rtt, ok := maxPing(ctx, n, bootstrap); ok {
		return rtt, RTTFromBootstrap
	}
	return 0, RTTNone
}

// maxPing pings the peers concurrently and returns the largest RTT of those
// that answered, in seconds; ok is false when none answered.
func maxPing(ctx context.Context, n *p2p.Node, peers []peer.AddrInfo) (float64, bool) {
	var mu sync.Mutex
	worst, ok := 0.0, false
	var wg sync.WaitGroup
	for _, p := range peers[:min(len(peers), rttMaxPeers)] {
		if p.ID == n.ID() {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, rttPingTimeout)
			defer cancel()
			rtt, err := n.Ping(pctx, p, rttPings)
			if err != nil {
				return
			}
			mu.Lock()
			worst, ok = max(worst, rtt.Seconds()), true
			mu.Unlock()
		})
	}
	wg.Wait()
	return worst, ok
}
