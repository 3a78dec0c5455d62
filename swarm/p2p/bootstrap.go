package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
)

// runBootstrap dials the bootstrap peers in rounds separated by exponential
// back-off until one answers, marks the node ready, refreshes the DHT routing
// table, then waits; when the node loses its last connection it starts over.
// It returns when the node is closed.
func (n *Node) runBootstrap() {
	defer n.wg.Done()
	if len(n.bootstrap) == 0 && len(n.bootstrapDNS) == 0 {
		n.markReady()
		return
	}
	w := newUnreachableWatch(n.opts.bootstrapWarnAfter)
	for {
		if err := retryWithBackoff(n.ctx, n.opts.backoff(), func(ctx context.Context) bool { return n.dialBootstrap(ctx, w) }); err != nil {
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

// bootstrapInfos returns the bootstrap peers: those of --bootstrap with an
// id, then those the /dnsaddr addresses resolve to now (a failed lookup is
// reported to w under the address).
func (n *Node) bootstrapInfos(ctx context.Context, w *unreachableWatch) []peer.AddrInfo {
	infos := slices.Clone(n.bootstrap)
	for _, a := range n.bootstrapDNS {
		rctx, cancel := context.WithTimeout(ctx, n.opts.dialTimeout)
		resolved, err := n.opts.resolver.Resolve(rctx, a)
		cancel()
		if err == nil && len(resolved) == 0 {
			err = errors.New("no _dnsaddr TXT record")
		}
		var found []peer.AddrInfo
		if err == nil {
			found, err = peer.AddrInfosFromP2pAddrs(resolved...)
		}
		if err != nil {
			w.failed(n.opts.logger, a.String(), fmt.Errorf("resolve: %w", err), time.Now())
			continue
		}
		w.ok(a.String())
		infos = append(infos, found...)
	}
	return infos
}

// dialBootstrap dials every bootstrap peer concurrently and reports whether
// at least one connection is up; w follows how long each stays unreachable.
func (n *Node) dialBootstrap(ctx context.Context, w *unreachableWatch) bool {
	infos := n.bootstrapInfos(ctx, w)
	errs := make([]error, len(infos))
	var wg sync.WaitGroup
	for i, info := range infos {
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
				errs[i] = err
			}
		})
	}
	wg.Wait()
	ok := false
	now := time.Now()
	for i, info := range infos {
		if errs[i] == nil {
			ok = true
			w.ok(info.ID.String())
			continue
		}
		if ctx.Err() == nil {
			w.failed(n.opts.logger, info.ID.String(), errs[i], now)
		}
	}
	return ok
}

// unreachableWatch remembers since when each bootstrap peer (or /dnsaddr
// address) has failed, and warns once per outage when one has failed for
// longer than after. Used by runBootstrap's goroutine only.
type unreachableWatch struct {
	after  time.Duration
	since  map[string]time.Time
	warned map[string]bool
}

func newUnreachableWatch(after time.Duration) *unreachableWatch {
	return &unreachableWatch{after: after, since: map[string]time.Time{}, warned: map[string]bool{}}
}

func (w *unreachableWatch) ok(key string) {
	delete(w.since, key)
	delete(w.warned, key)
}

func (w *unreachableWatch) failed(log *slog.Logger, key string, err error, now time.Time) {
	first, seen := w.since[key]
	if !seen {
		w.since[key] = now
		first = now
	}
	if w.warned[key] || now.Sub(first) < w.after {
		return
	}
	w.warned[key] = true
	log.Warn("p2p: bootstrap peer unreachable for a long time; still retrying. Check that the address is right "+
		"(`swarm identity --identity KEY` on that node prints its peer id), that the node runs and that its port is open "+
		"to this machine, or pass another --bootstrap (or $SWARM_BOOTSTRAP)",
		"peer", key, "for", now.Sub(first).Round(time.Second).String(), "err", err)
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
