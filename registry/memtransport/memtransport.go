// Package memtransport is the in-memory twin of the registry's libp2p
// transport (hashicorp/raft inmem_transport style): a Network of endpoints
// that broadcast to and exchange with each other through channels, with
// hooks to partition the network, drop links and delay messages, so that
// scenario tests can split and heal a swarm deterministically (inside
// testing/synctest, delays run on the fake clock).
//
// This package must never import libp2p or any package of this repository
// other than registry.
package memtransport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/swarmllm/swarm/registry"
)

// ErrUnreachable is returned by Exchange when the network separates the
// endpoints (partition, dropped link, or the peer left).
var ErrUnreachable = errors.New("memtransport: peer unreachable")

// inboundBuffer is the capacity of each endpoint's inbound queue; broadcasts
// to a full queue are dropped, as gossip may drop.
const inboundBuffer = 1024

type link struct{ from, to string }

// Network connects endpoints. It is safe for concurrent use.
type Network struct {
	mu              sync.Mutex // guards the fields with the Locked suffix
	nodesLocked     map[string]*Transport
	groupLocked     map[string]int // partition group per node; absent = group 0
	dropLocked      map[link]bool
	delayLocked     map[link]time.Duration
	wgDelayed       sync.WaitGroup // delayed deliveries in flight
	droppedLocked   int
	deliveredLocked int
}

// NewNetwork returns an empty, fully connected network.
func NewNetwork() *Network {
	return &Network{
		nodesLocked: map[string]*Transport{},
		groupLocked: map[string]int{},
		dropLocked:  map[link]bool{},
		delayLocked: map[link]time.Duration{},
	}
}

// Join adds an endpoint with node id id (replacing a closed one of the same
// id, as a restarted process would).
func (n *Network) Join(id string) *Transport {
	t := &Transport{net: n, id: id, inbound: make(chan registry.Message, inboundBuffer), done: make(chan struct{})}
	n.mu.Lock()
	n.nodesLocked[id] = t
	n.mu.Unlock()
	return t
}

// Partition splits the network into the given groups: endpoints in different
// groups cannot reach each other. Endpoints not named form one more group.
func (n *Network) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groupLocked = map[string]int{}
	for i, g := range groups {
		for _, id := range g {
			n.groupLocked[id] = i + 1
		}
	}
}

// Heal removes every partition (dropped links and delays stay).
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groupLocked = map[string]int{}
}

// Drop makes broadcasts from -> to vanish (drop = true), as lossy gossip
// would, or flow again; exchanges (streams) still work. Use Partition to cut
// connectivity.
func (n *Network) Drop(from, to string, drop bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if drop {
		n.dropLocked[link{from, to}] = true
	} else {
		delete(n.dropLocked, link{from, to})
	}
}

// Delay holds messages from -> to for d before delivery (0 removes it).
func (n *Network) Delay(from, to string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d <= 0 {
		delete(n.delayLocked, link{from, to})
	} else {
		n.delayLocked[link{from, to}] = d
	}
}

// Dropped returns how many broadcast deliveries were lost (unreachable or
// full queue); Delivered how many arrived.
func (n *Network) Dropped() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.droppedLocked
}

// Delivered returns how many broadcast deliveries arrived.
func (n *Network) Delivered() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.deliveredLocked
}

// Wait blocks until every delayed delivery has been made or dropped.
func (n *Network) Wait() { n.wgDelayed.Wait() }

// routeLocked returns the destination endpoint and delay, or nil when from
// cannot reach to (closed, or across a partition).
func (n *Network) routeLocked(from, to string) (*Transport, time.Duration) {
	dst, ok := n.nodesLocked[to]
	if !ok || dst.isClosed() || n.groupLocked[from] != n.groupLocked[to] {
		return nil, 0
	}
	return dst, n.delayLocked[link{from, to}]
}

// gossipRouteLocked is routeLocked for broadcasts, which Drop also loses.
func (n *Network) gossipRouteLocked(from, to string) (*Transport, time.Duration) {
	if n.dropLocked[link{from, to}] {
		return nil, 0
	}
	return n.routeLocked(from, to)
}

// Transport is one endpoint of a Network.
type Transport struct {
	net       *Network
	id        string
	inbound   chan registry.Message
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

var _ registry.Transport = (*Transport)(nil)

func (t *Transport) isClosed() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// Broadcast delivers data to every endpoint t can reach (after the link's
// delay); deliveries to a full queue are dropped.
func (t *Transport) Broadcast(_ context.Context, data []byte) error {
	if t.isClosed() {
		return registry.ErrClosed
	}
	n := t.net
	n.mu.Lock()
	ids := make([]string, 0, len(n.nodesLocked))
	for id := range n.nodesLocked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if id == t.id {
			continue
		}
		dst, delay := n.gossipRouteLocked(t.id, id)
		if dst == nil {
			n.droppedLocked++
			continue
		}
		msg := registry.Message{From: t.id, Data: slices.Clone(data)}
		if delay == 0 {
			n.offerLocked(dst, msg)
			continue
		}
		n.wgDelayed.Add(1)
		time.AfterFunc(delay, func() {
			defer n.wgDelayed.Done()
			n.mu.Lock()
			defer n.mu.Unlock()
			// The partition may have changed meanwhile.
			if d, _ := n.gossipRouteLocked(t.id, dst.id); d == dst {
				n.offerLocked(dst, msg)
			} else {
				n.droppedLocked++
			}
		})
	}
	n.mu.Unlock()
	return nil
}

// offerLocked queues msg at dst without blocking.
func (n *Network) offerLocked(dst *Transport, msg registry.Message) {
	select {
	case dst.inbound <- msg:
		n.deliveredLocked++
	default:
		n.droppedLocked++
	}
}

// Exchange sends data to peer and waits for its reply, after the link's
// delay each way. It returns an error wrapping ErrUnreachable when the
// network separates them.
func (t *Transport) Exchange(ctx context.Context, peer string, data []byte) ([]byte, error) {
	if t.isClosed() {
		return nil, registry.ErrClosed
	}
	n := t.net
	n.mu.Lock()
	dst, delay := n.routeLocked(t.id, peer)
	src, back := n.routeLocked(peer, t.id)
	n.mu.Unlock()
	if dst == nil || src == nil {
		return nil, fmt.Errorf("%w: %s <-> %s", ErrUnreachable, t.id, peer)
	}
	if err := sleep(ctx, delay); err != nil {
		return nil, err
	}
	done := make(chan reply, 1)
	msg := registry.Message{From: t.id, Data: slices.Clone(data), Reply: func(d []byte, err error) { done <- reply{d, err} }}
	select {
	case dst.inbound <- msg:
	case <-dst.done:
		return nil, fmt.Errorf("%w: %s closed", ErrUnreachable, peer)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var rep reply
	select {
	case rep = <-done:
	case <-dst.done:
		return nil, fmt.Errorf("%w: %s closed", ErrUnreachable, peer)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := sleep(ctx, back); err != nil {
		return nil, err
	}
	return rep.data, rep.err
}

type reply struct {
	data []byte
	err  error
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Peers returns every other open endpoint of the network, reachable or not
// (as a libp2p node does not know a link is cut until it tries).
func (t *Transport) Peers() []string {
	n := t.net
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for id, p := range n.nodesLocked {
		if id != t.id && !p.isClosed() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Inbound delivers broadcasts and exchange requests.
func (t *Transport) Inbound() <-chan registry.Message { return t.inbound }

// Close takes the endpoint off the network (a crash, from the others' view).
func (t *Transport) Close() error {
	t.closeOnce.Do(func() { close(t.done) })
	return nil
}
