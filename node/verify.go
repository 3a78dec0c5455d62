package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// DefaultVerifyTimeout bounds the info probe that verifies one registry
// entry before placement counts it.
const DefaultVerifyTimeout = 2 * time.Second

// VerifyEntries returns the entries placement may count: every entry that
// is not SERVING (joiners are still measuring: they have nothing to
// answer yet) and, of the SERVING ones, those whose server answers an info
// probe over its own libp2p identity (/swarm/info/1 to the entry's node id:
// libp2p authenticates the peer, so the answer comes from the key that
// signed the entry) within timeout, advertising the entry's model and
// span. A signed registry entry proves its key wrote it, not that a server
// stands behind it: without this check one self-signed entry pointing at a
// black hole would pull `--blocks auto` placement away from blocks nobody
// serves. Unverified entries are logged at WARN and left out. Probes run
// concurrently; ctx bounds them all.
func VerifyEntries(ctx context.Context, t *Transport, entries []registry.Entry, self string, timeout time.Duration, log *slog.Logger) []registry.Entry {
	keep := make([]bool, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		if e.NodeID == self || e.State != swarm.StateServing {
			keep[i] = true
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := verifyEntry(pctx, t, e)
			if err != nil {
				log.Warn("registry entry not verified: placement leaves it out", "node", e.NodeID, "span", e.Info.Span.String(), "err", err)
			}
			keep[i] = err == nil
		})
	}
	wg.Wait()
	var out []registry.Entry
	for i, e := range entries {
		if keep[i] {
			out = append(out, e)
		}
	}
	return out
}

// verifyEntry probes e's server over its libp2p identity and checks its
// answer against the entry.
func verifyEntry(ctx context.Context, t *Transport, e registry.Entry) error {
	info, err := t.FetchInfo(ctx, api.P2PEndpoint(e.NodeID))
	if err != nil {
		return err
	}
	if info.Model != e.Info.Model || info.Span != e.Info.Span {
		return fmt.Errorf("its server answers model %q span %s, the entry says %q span %s", info.Model, info.Span, e.Info.Model, e.Info.Span)
	}
	return nil
}

// entryAddrs returns the libp2p addresses entries advertise for a peer (a
// Transport's addrs function).
func entryAddrs(entries []registry.Entry) func(peer.ID) []ma.Multiaddr {
	byID := map[string][]string{}
	for _, e := range entries {
		byID[e.NodeID] = e.Info.Endpoints
	}
	return func(id peer.ID) []ma.Multiaddr {
		var out []ma.Multiaddr
		for _, s := range byID[id.String()] {
			a, err := ma.NewMultiaddr(s)
			if err != nil {
				continue
			}
			if info, err := peer.AddrInfoFromP2pAddr(a); err == nil && info.ID == id {
				out = append(out, info.Addrs...)
			}
		}
		return out
	}
}
