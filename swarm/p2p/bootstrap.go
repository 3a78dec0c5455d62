package p2p

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
)

// runBootstrap dials the bootstrap peers in rounds separated by exponential
// back-off until one answers, marks the node ready, refreshes the DHT routing
// table, then waits; when the node loses its last connection it starts over.
// It returns when the node is closed.
func (n *Node) runBootstrap() {
	defer n.wg.Done()
	if len(n.bootstrap) == 0 {
		n.markReady()
		return
	}
	for {
		if err := retryWithBackoff(n.ctx, n.opts.backoff(), n.dialBootstrap); err != nil {
			return // closed
		}
		n.markReady()
		// Fill the routing table from the bootstrap peer's view now rather
		// than at the next periodic refresh.
		_ = n.dht.RefreshRoutingTable()
		if !n.waitIsolated() {
			return
		}
		n.opts.logger.Warn("p2p: lost every connection; dialling the bootstrap peers again")
	}
}

// dialBootstrap dials every bootstrap peer concurrently and reports whether
// at least one connection is up.
func (n *Node) dialBootstrap(ctx context.Context) bool {
	var ok atomic.Bool
	var wg sync.WaitGroup
	for _, info := range n.bootstrap {
		wg.Go(func() {
			dctx, cancel := context.WithTimeout(ctx, n.opts.dialTimeout)
			defer cancel()
			// This loop paces its own retries; libp2p's per-peer dial
			// back-off (5 s and more) would only delay the next round.
			if sw, isSwarm := n.host.Network().(*swarm.Swarm); isSwarm {
				sw.Backoff().Clear(info.ID)
			}
			if err := n.host.Connect(dctx, info); err != nil {
				n.opts.logger.Info("p2p: bootstrap peer unreachable", "peer", info.ID, "err", err)
				return
			}
			ok.Store(true)
		})
	}
	wg.Wait()
	return ok.Load()
}

// waitIsolated blocks until the node has no connection left (true) or it is
// closed (false).
func (n *Node) waitIsolated() bool {
	for {
		if len(n.host.Network().Peers()) == 0 {
			return true
		}
		select {
		case <-n.ctx.Done():
			return false
		case <-n.isolated:
		}
	}
}

// watchPeers drains the connectedness events (the event bus blocks emitters
// on a full subscriber) and signals isolated when the last peer went away.
func (n *Node) watchPeers() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case ev, ok := <-n.peerEvents.Out():
			if !ok {
				return
			}
			e, isConn := ev.(event.EvtPeerConnectednessChanged)
			if !isConn || e.Connectedness == network.Connected || len(n.host.Network().Peers()) > 0 {
				continue
			}
			select {
			case n.isolated <- struct{}{}:
			default: // a signal is already pending
			}
		}
	}
}

// retryWithBackoff calls attempt until it reports success, pausing between
// failures for the delays b yields. It returns nil on success and ctx's error
// when ctx is done first (checked before each attempt and during pauses).
func retryWithBackoff(ctx context.Context, b backoff.BackoffStrategy, attempt func(context.Context) bool) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if attempt(ctx) {
			b.Reset()
			return nil
		}
		t := time.NewTimer(b.Delay())
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
