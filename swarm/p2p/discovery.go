package p2p

import (
	"context"
	mrand "math/rand"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
)

// maxReadvertise caps the pause between two advertisements at the
// rendezvous, so that provider records spread to nodes that joined since.
const maxReadvertise = 10 * time.Minute

// runDiscovery waits until the node is ready, then (in DHT server or auto
// mode) keeps the node advertised at the rendezvous, and looks the
// rendezvous up at growing intervals (1 s doubling up to the discovery
// interval) to connect to peers beyond the bootstrap peers until it holds
// the target number of connections.
func (n *Node) runDiscovery() {
	defer n.wg.Done()
	select {
	case <-n.ready:
	case <-n.ctx.Done():
		return
	}
	if n.advertise {
		n.wg.Add(1)
		go n.runAdvertise(n.opts.rendezvous)
	}
	pause := time.Second
	for {
		n.findPeers(n.ctx)
		t := time.NewTimer(pause)
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, n.opts.discoveryInterval)
	}
}

// runAdvertise advertises the node at the rendezvous ns, retrying failures
// (typically an empty routing table right after bootstrap) with back-off.
func (n *Node) runAdvertise(ns string) {
	defer n.wg.Done()
	retry := backoff.NewExponentialBackoff(time.Second, time.Minute, backoff.NoJitter, time.Second, 2, 0, mrand.NewSource(0))()
	for {
		ttl, err := n.disc.Advertise(n.ctx, ns)
		wait := min(7*ttl/8, maxReadvertise)
		if err != nil {
			n.opts.logger.Debug("p2p: advertise at rendezvous failed", "rendezvous", ns, "err", err)
			wait = retry.Delay()
		} else {
			retry.Reset()
		}
		t := time.NewTimer(wait)
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// findPeers looks up the rendezvous and dials found peers concurrently until
// the node holds the target number of connections.
func (n *Node) findPeers(ctx context.Context) {
	need := n.opts.targetPeers - len(n.host.Network().Peers())
	if need <= 0 {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, n.opts.dialTimeout)
	defer cancel()
	ch, err := n.disc.FindPeers(fctx, n.opts.rendezvous, discovery.Limit(4*n.opts.targetPeers))
	if err != nil {
		n.opts.logger.Debug("p2p: rendezvous lookup failed", "err", err)
		return
	}
	var found []peer.AddrInfo
	for info := range ch {
		if info.ID == n.host.ID() || len(info.Addrs) == 0 ||
			n.host.Network().Connectedness(info.ID) == network.Connected {
			continue
		}
		found = append(found, info)
	}
	rand.Shuffle(len(found), func(i, j int) { found[i], found[j] = found[j], found[i] })
	var wg sync.WaitGroup
	for _, info := range found[:min(need, len(found))] {
		wg.Go(func() {
			dctx, cancel := context.WithTimeout(ctx, n.opts.dialTimeout)
			defer cancel()
			if err := n.host.Connect(dctx, info); err != nil {
				n.opts.logger.Debug("p2p: discovered peer unreachable", "peer", info.ID, "err", err)
			}
		})
	}
	wg.Wait()
}
