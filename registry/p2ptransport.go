package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	"github.com/libp2p/go-msgio"
)

const (
	// GossipTopic is the GossipSub topic carrying signed entries.
	GossipTopic = "/swarm/registry/1"
	// SyncProtocol is the stream protocol of anti-entropy: the initiator
	// writes its state as one varint-length-prefixed message and closes its
	// side; the responder answers with the entries it holds newer, framed
	// the same way.
	SyncProtocol protocol.ID = "/swarm/registry/sync/1"
	// inboundBuffer is how many inbound messages wait for the registry.
	inboundBuffer = 256
)

// P2PTransport is the registry Transport on a libp2p host: broadcasts go
// over GossipSub (go-libp2p-pubsub, a router of its own on the host; the
// topic validator drops forged entries so they are not forwarded) and
// exchanges over SyncProtocol streams.
type P2PTransport struct {
	h       host.Host
	ps      *pubsub.PubSub
	topic   *pubsub.Topic
	sub     *pubsub.Subscription
	inbound chan Message
	events  event.Subscription // identify results, to report new members
	joined  chan string        // NewPeers

	ctx    context.Context // cancelled by Close; also the GossipSub router's lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup // readLoop and the stream handlers

	mu           sync.Mutex // guards closedLocked
	closedLocked bool
	closeOnce    sync.Once
}

var (
	_ Transport    = (*P2PTransport)(nil)
	_ PeerNotifier = (*P2PTransport)(nil)
)

// NewP2PTransport starts GossipSub on h, joins GossipTopic and serves
// SyncProtocol.
func NewP2PTransport(h host.Host) (*P2PTransport, error) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &P2PTransport{h: h, inbound: make(chan Message, inboundBuffer), joined: make(chan string, inboundBuffer), ctx: ctx, cancel: cancel}
	fail := func(err error) (*P2PTransport, error) {
		cancel()
		return nil, fmt.Errorf("registry: start gossip: %w", err)
	}
	var err error
	if t.ps, err = pubsub.NewGossipSub(ctx, h); err != nil {
		return fail(err)
	}
	validate := func(_ context.Context, _ peer.ID, msg *pubsub.Message) bool {
		_, err := openEntry(msg.Data)
		return err == nil
	}
	if err = t.ps.RegisterTopicValidator(GossipTopic, validate); err != nil {
		return fail(err)
	}
	if t.topic, err = t.ps.Join(GossipTopic); err != nil {
		return fail(err)
	}
	if t.sub, err = t.topic.Subscribe(); err != nil {
		return fail(errors.Join(err, t.topic.Close()))
	}
	if t.events, err = h.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted), eventbus.BufSize(256)); err != nil {
		t.sub.Cancel()
		return fail(err)
	}
	h.SetStreamHandler(SyncProtocol, t.handleStream)
	t.wg.Add(2)
	go t.readLoop()
	go t.watchPeers()
	return t, nil
}

// enter registers a goroutine started by libp2p (a stream handler) with the
// WaitGroup; it returns false once Close has begun.
func (t *P2PTransport) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closedLocked {
		return false
	}
	t.wg.Add(1)
	return true
}

// readLoop forwards gossiped entries from other members to Inbound.
func (t *P2PTransport) readLoop() {
	defer t.wg.Done()
	for {
		msg, err := t.sub.Next(t.ctx)
		if err != nil {
			return // cancelled or closed
		}
		if msg.ReceivedFrom == t.h.ID() {
			continue // our own publication
		}
		select {
		case t.inbound <- Message{From: msg.ReceivedFrom.String(), Data: msg.Data}:
		case <-t.ctx.Done():
			return
		}
	}
}

// watchPeers reports peers whose identification lists SyncProtocol.
func (t *P2PTransport) watchPeers() {
	defer t.wg.Done()
	for {
		select {
		case <-t.ctx.Done():
			return
		case ev, ok := <-t.events.Out():
			if !ok {
				return
			}
			e, isID := ev.(event.EvtPeerIdentificationCompleted)
			if !isID || !slices.Contains(e.Protocols, SyncProtocol) {
				continue
			}
			select {
			case t.joined <- e.Peer.String():
			default: // the registry is behind; periodic anti-entropy covers it
			}
		}
	}
}

// NewPeers reports each member as its connection is identified.
func (t *P2PTransport) NewPeers() <-chan string { return t.joined }

type reply struct {
	data []byte
	err  error
}

// handleStream serves one anti-entropy exchange.
func (t *P2PTransport) handleStream(s network.Stream) {
	if !t.enter() {
		_ = s.Reset()
		return
	}
	defer t.wg.Done()
	_ = s.SetDeadline(time.Now().Add(exchangeTimeout))
	req, err := msgio.NewVarintReaderSize(s, MaxMessageBytes).ReadMsg()
	if err != nil {
		_ = s.Reset()
		return
	}
	done := make(chan reply, 1)
	msg := Message{
		From:  s.Conn().RemotePeer().String(),
		Data:  req,
		Reply: func(data []byte, err error) { done <- reply{data, err} },
	}
	timeout := time.NewTimer(exchangeTimeout)
	defer timeout.Stop()
	select {
	case t.inbound <- msg:
	case <-t.ctx.Done():
		_ = s.Reset()
		return
	case <-timeout.C:
		_ = s.Reset()
		return
	}
	var rep reply
	select {
	case rep = <-done:
	case <-t.ctx.Done():
		_ = s.Reset()
		return
	case <-timeout.C:
		_ = s.Reset()
		return
	}
	if rep.err != nil {
		_ = s.Reset()
		return
	}
	if err := msgio.NewVarintWriter(s).WriteMsg(rep.data); err != nil {
		_ = s.Reset()
		return
	}
	_ = s.Close()
}

// Broadcast publishes one signed entry on GossipTopic.
func (t *P2PTransport) Broadcast(ctx context.Context, data []byte) error {
	if t.ctx.Err() != nil {
		return ErrClosed
	}
	if err := t.topic.Publish(ctx, data); err != nil {
		return fmt.Errorf("registry: gossip: %w", err)
	}
	return nil
}

// Exchange runs one SyncProtocol exchange with peerID (a peer id string).
func (t *P2PTransport) Exchange(ctx context.Context, peerID string, data []byte) ([]byte, error) {
	if t.ctx.Err() != nil {
		return nil, ErrClosed
	}
	pid, err := peer.Decode(peerID)
	if err != nil {
		return nil, fmt.Errorf("registry: peer %q: %w", peerID, err)
	}
	// Peers reachable only through a circuit relay have limited
	// connections; a state exchange is small enough to use them.
	s, err := t.h.NewStream(network.WithAllowLimitedConn(ctx, "registry anti-entropy"), pid, SyncProtocol)
	if err != nil {
		return nil, fmt.Errorf("registry: open %s stream: %w", SyncProtocol, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(exchangeTimeout))
	if err := msgio.NewVarintWriter(s).WriteMsg(data); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("registry: send state: %w", err)
	}
	if err := s.CloseWrite(); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("registry: send state: %w", err)
	}
	resp, err := msgio.NewVarintReaderSize(s, MaxMessageBytes).ReadMsg()
	if err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("registry: read reply: %w", err)
	}
	return resp, nil
}

// Peers returns the connected peers known (from identify) to serve
// SyncProtocol, or every connected peer when none is known yet.
func (t *P2PTransport) Peers() []string {
	var sync, all []string
	for _, p := range t.h.Network().Peers() {
		all = append(all, p.String())
		if ok, _ := t.h.Peerstore().SupportsProtocols(p, SyncProtocol); len(ok) > 0 {
			sync = append(sync, p.String())
		}
	}
	if len(sync) == 0 {
		return all
	}
	return sync
}

// Inbound delivers gossiped entries and exchange requests.
func (t *P2PTransport) Inbound() <-chan Message { return t.inbound }

// Close stops serving, shuts the GossipSub router down (cancelling its
// context ends its event loop and the subscription) and waits for the
// transport's goroutines. It is idempotent.
func (t *P2PTransport) Close() error {
	var err error
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closedLocked = true
		t.mu.Unlock()
		t.h.RemoveStreamHandler(SyncProtocol)
		t.sub.Cancel()
		t.cancel()
		t.wg.Wait()
		err = t.events.Close()
	})
	return err
}
