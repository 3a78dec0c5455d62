package p2p

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// ClientRendezvous is the DHT namespace where nodes that originate sessions
// (clients, ingress nodes) advertise themselves, so that a joining server
// can find them and measure its round trip times t_cj to them (paper 003
// eq. 14: placement's t*_j = max_c t_cj).
const ClientRendezvous = "swarm/clients/1"

// AdvertiseAt keeps the node advertised at the DHT rendezvous ns from now
// until Close, in the background: it waits until the node is ready, then
// advertises, re-advertising before the records expire and retrying
// failures with back-off. A node in DHT client mode can advertise too (its
// provider records are stored on DHT server nodes). It returns ErrClosed
// after Close and an error wrapping ErrBadConfig for an empty ns.
func (n *Node) AdvertiseAt(ns string) error {
	if ns == "" {
		return fmt.Errorf("%w: AdvertiseAt: empty rendezvous namespace", ErrBadConfig)
	}
	n.startMu.Lock()
	defer n.startMu.Unlock()
	if n.ctx.Err() != nil {
		return ErrClosed
	}
	n.wg.Add(1)
	go func() {
		select {
		case <-n.ready:
		case <-n.ctx.Done():
			n.wg.Done()
			return
		}
		n.runAdvertise(ns) // calls wg.Done
	}()
	return nil
}

// FindAt looks the DHT rendezvous ns up and returns up to limit peers
// advertised there (this node excluded), as many as were found when the
// lookup ended or ctx ended, whichever comes first. It returns an error
// only when the lookup could not start (e.g. an empty routing table) or
// the node is closed (ErrClosed).
func (n *Node) FindAt(ctx context.Context, ns string, limit int) ([]peer.AddrInfo, error) {
	if n.ctx.Err() != nil {
		return nil, ErrClosed
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: FindAt: limit %d, want >= 1", ErrBadConfig, limit)
	}
	ch, err := n.disc.FindPeers(ctx, ns, discovery.Limit(limit+1))
	if err != nil {
		return nil, fmt.Errorf("p2p: look up rendezvous %q: %w", ns, err)
	}
	var found []peer.AddrInfo
	for info := range ch {
		if info.ID == n.host.ID() || len(found) == limit {
			continue // drain: the channel closes when the lookup ends
		}
		found = append(found, info)
	}
	return found, nil
}

// Ping measures the round trip time to p with the libp2p ping protocol
// (/ipfs/ping/1.0.0): it connects (using p.Addrs, or the addresses the
// node already knows), sends count pings over one stream and returns the
// fastest, in the spirit of the client's info probe, which keeps the faster
// of two reads. The fastest ping carries the least queueing delay. ctx
// bounds the whole measurement.
func (n *Node) Ping(ctx context.Context, p peer.AddrInfo, count int) (time.Duration, error) {
	if n.ctx.Err() != nil {
		return 0, ErrClosed
	}
	if count < 1 {
		return 0, fmt.Errorf("%w: Ping: count %d, want >= 1", ErrBadConfig, count)
	}
	if p.ID == n.host.ID() {
		return 0, fmt.Errorf("%w: Ping: %s is this node", ErrBadConfig, p.ID)
	}
	if err := n.host.Connect(ctx, p); err != nil {
		return 0, fmt.Errorf("p2p: ping %s: connect: %w", p.ID, err)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var best time.Duration
	got := 0
	for res := range ping.Ping(pctx, n.host, p.ID) {
		if res.Error != nil {
			return 0, fmt.Errorf("p2p: ping %s: %w", p.ID, res.Error)
		}
		if got == 0 || res.RTT < best {
			best = res.RTT
		}
		if got++; got == count {
			return best, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("p2p: ping %s: %w", p.ID, err)
	}
	return 0, fmt.Errorf("p2p: ping %s: %w", p.ID, errors.New("stream ended"))
}
