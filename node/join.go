package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// ClientNode is a client-only member of the swarm (a `swarm generate
// --bootstrap` client or an ingress): a node in DHT client mode and a
// registry replica that publishes nothing. It advertises itself at
// p2p.ClientRendezvous so that joining servers measure their RTTs to it.
type ClientNode struct {
	// Node is the node network member.
	Node *p2p.Node
	// Registry is the replica, kept up to date by gossip and anti-entropy.
	Registry *registry.Registry
}

// JoinClient starts a client-only member: a p2p node from pc (its DHTMode
// is forced to client: a client is not a DHT server), a registry replica
// with rc's timing, the advertisement at p2p.ClientRendezvous, and, when pc
// has bootstrap peers, a first anti-entropy pull of the registry
// (SyncRegistry, bounded by ctx). Close it when done.
//
// Errors wrap p2p.ErrBadConfig, registry.ErrBadConfig, or SyncRegistry's.
func JoinClient(ctx context.Context, pc p2p.Config, rc registry.Config, opts ...p2p.Option) (*ClientNode, error) {
	pc.DHTMode = p2p.DHTModeClient
	n, err := p2p.New(pc, opts...)
	if err != nil {
		return nil, err
	}
	reg, err := registry.Join(n, rc)
	if err != nil {
		return nil, errors.Join(err, n.Close())
	}
	c := &ClientNode{Node: n, Registry: reg}
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

// Close stops the registry replica, then the node.
func (c *ClientNode) Close() error {
	return errors.Join(c.Registry.Close(), c.Node.Close())
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
