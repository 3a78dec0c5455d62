package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// Member is a member of the swarm: a node of the node network and its
// registry replica. JoinClient makes a client-only one (a `swarm generate
// --bootstrap` client or an ingress: DHT client mode, publishes nothing,
// advertised at p2p.ClientRendezvous so that joining servers measure their
// RTTs to it); Join a plain one (`swarm status`, `registry announce`, a
// full-range replica).
type Member struct {
	// Node is the node network member.
	Node *p2p.Node
	// Registry is the replica, kept up to date by gossip and anti-entropy.
	Registry *registry.Registry

	// stop ends the member's background work (closeSuspected); done is
	// closed when it has ended. Both nil when there is none.
	stop context.CancelFunc
	done chan struct{}
}

// JoinClient starts a client-only member: a p2p node from pc (its DHTMode
// is forced to client: a client is not a DHT server), a registry replica
// with rc's timing, the advertisement at p2p.ClientRendezvous, and, when pc
// has bootstrap peers, a first anti-entropy pull of the registry
// (SyncRegistry, bounded by ctx). Close it when done.
//
// Errors wrap p2p.ErrBadConfig, registry.ErrBadConfig, or SyncRegistry's.
func JoinClient(ctx context.Context, pc p2p.Config, rc registry.Config, opts ...p2p.Option) (*Member, error) {
	pc.DHTMode = p2p.DHTModeClient
	n, err := p2p.New(pc, opts...)
	if err != nil {
		return nil, err
	}
	reg, err := registry.Join(n, rc)
	if err != nil {
		return nil, errors.Join(err, n.Close())
	}
	c := &Member{Node: n, Registry: reg, done: make(chan struct{})}
	var cctx context.Context
	cctx, c.stop = context.WithCancel(context.Background())
	go func() {
		defer close(c.done)
		closeSuspected(cctx, n, reg)
	}()
	if err := n.AdvertiseAt(p2p.ClientRendezvous); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	if len(pc.Bootstrap) > 0 {
		if err := SyncRegistry(ctx, n, reg); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

// Join starts a member: a p2p node from pc (log, when not nil, receives
// its logs) and a registry replica with rc's timing. It neither waits for
// a bootstrap peer nor pulls the registry (SyncRegistry does). Close it
// when done.
//
// Errors wrap p2p.ErrBadConfig, p2p.ErrBadIdentity, p2p.ErrBadSwarmKey,
// registry.ErrBadConfig, or the node's start errors.
func Join(pc p2p.Config, rc registry.Config, log *slog.Logger) (*Member, error) {
	var popts []p2p.Option
	var ropts []registry.Option
	if log != nil {
		popts, ropts = append(popts, p2p.WithLogger(log)), append(ropts, registry.WithLogger(log))
	}
	n, err := p2p.New(pc, popts...)
	if err != nil {
		return nil, err
	}
	reg, err := registry.Join(n, rc, ropts...)
	if err != nil {
		return nil, errors.Join(err, n.Close())
	}
	return &Member{Node: n, Registry: reg}, nil
}

// Close stops the member's background work, the registry replica, then
// the node.
func (c *Member) Close() error {
	if c.stop != nil {
		c.stop()
		<-c.done
	}
	return errors.Join(c.Registry.Close(), c.Node.Close())
}

// closeSuspected closes n's connections to every peer the registry shows
// SUSPECTED or LEFT (or collects) until ctx ends, so
// that the next stream to a server that died is dialled afresh rather than
// sent down the dead peer's lingering connection (a QUIC connection to a
// killed process stays open until its idle timeout). A peer that was only
// suspected reconnects on its next use.
func closeSuspected(ctx context.Context, n *p2p.Node, reg *registry.Registry) {
	for ev := range reg.Watch(ctx) {
		gone := ev.Removed || ev.Entry.State == swarm.StateSuspected || ev.Entry.State == swarm.StateLeft
		if !gone || ev.Entry.NodeID == reg.ID() {
			continue
		}
		pid, err := peer.Decode(ev.Entry.NodeID)
		if err != nil {
			continue
		}
		if n.Host().Network().Connectedness(pid) == network.Connected {
			_ = n.Host().Network().ClosePeer(pid)
		}
	}
}

// SyncRegistry waits until a bootstrap peer has answered, then pulls the
// registry with anti-entropy exchanges, retrying (100 ms doubling to 1 s)
// until one succeeds or ctx ends.
func SyncRegistry(ctx context.Context, n *p2p.Node, reg *registry.Registry) error {
	if err := n.WaitReady(ctx); err != nil {
		return fmt.Errorf("node: no bootstrap peer answered: %w", err)
	}
	pause := 100 * time.Millisecond
	for {
		err := reg.Sync(ctx)
		if err == nil {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("node: could not fetch the registry from a peer: %w", err)
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}
