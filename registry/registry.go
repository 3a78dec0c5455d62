package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/swarmllm/swarm/registry/crdt"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// Registry is one member's replica of the registry, kept up to date by
// gossip and anti-entropy over a Transport. Servers Publish their entry;
// clients only read. It is safe for concurrent use; Close stops every
// goroutine it started and waits for them.
type Registry struct {
	tr     Transport
	ownsTr bool
	key    crypto.PrivKey
	id     string
	cfg    Config
	timing crdt.Timing
	log    *slog.Logger
	now    func() time.Time // the wall clock (WithClock)

	mu sync.Mutex // guards the fields with the Locked suffix
	// gmapLocked is the replica.
	gmapLocked *crdt.Map
	// heardLocked is the local time (unix ms) at which the current entry of
	// each node arrived here; it feeds the local SUSPECTED overlay.
	heardLocked map[string]int64
	// shownLocked is the effective state last reported to watchers.
	shownLocked map[string]swarm.LifecycleState
	// ownLocked is this node's current entry; nil before the first Publish.
	ownLocked *crdt.Entry
	// supersededLocked is the largest incarnation of this node's id written
	// by someone else (an earlier life); the next write starts above it.
	supersededLocked uint64
	// watchersLocked are the open Watch subscriptions.
	watchersLocked map[*watcher]struct{}
	// changedLocked is closed, and replaced, at every change (Changed).
	changedLocked chan struct{}
	// skewLocked is what this replica learned of other nodes' clocks.
	skewLocked map[string]*skewRecord

	bcast chan struct{} // buffered 1: the own entry changed, broadcast it

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // every goroutine started by the Registry
	closeOnce sync.Once
	closeErr  error
}

// Option configures New and Join.
type Option func(*options) error

type options struct {
	logger *slog.Logger
	now    func() time.Time
}

// WithClock replaces time.Now as the registry's wall clock (heartbeat
// stamps, receive times, liveness); a test gives a node a skewed clock
// with it.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("registry: WithClock: nil clock")
		}
		o.now = now
		return nil
	}
}

// WithLogger sends the registry's log lines to l (default: discarded).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("registry: WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// New starts a registry member on tr, signing its entries with key (the
// node's libp2p identity; its peer id is the node id). The caller keeps
// ownership of tr and closes it after Close.
func New(tr Transport, key crypto.PrivKey, cfg Config, opts ...Option) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tr == nil || key == nil {
		return nil, fmt.Errorf("%w: nil transport or key", ErrBadConfig)
	}
	o := options{logger: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("%w: node key: %w", ErrBadConfig, err)
	}
	r := &Registry{
		tr:             tr,
		key:            key,
		id:             id.String(),
		cfg:            cfg,
		timing:         cfg.timing(),
		log:            o.logger,
		now:            o.now,
		skewLocked:     map[string]*skewRecord{},
		gmapLocked:     crdt.NewMap(),
		heardLocked:    map[string]int64{},
		shownLocked:    map[string]swarm.LifecycleState{},
		watchersLocked: map[*watcher]struct{}{},
		changedLocked:  make(chan struct{}),
		bcast:          make(chan struct{}, 1),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(4)
	go r.inboundLoop()
	go r.tickLoop()
	go r.antiEntropyLoop()
	go r.broadcastLoop()
	return r, nil
}

// Join starts a registry member on a libp2p node: gossip on the node's host
// (P2PTransport) and entries signed with the node's identity key. Close
// closes the transport too (not the node).
func Join(node *p2p.Node, cfg Config, opts ...Option) (*Registry, error) {
	if node == nil {
		return nil, fmt.Errorf("%w: nil node", ErrBadConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr, err := NewP2PTransport(node.Host())
	if err != nil {
		return nil, err
	}
	r, err := New(tr, node.PrivateKey(), cfg, opts...)
	if err != nil {
		return nil, errors.Join(err, tr.Close())
	}
	r.ownsTr = true
	return r, nil
}

// ID returns this member's node id (its peer id).
func (r *Registry) ID() string { return r.id }

// Session returns the session id of this node's current life, or "" before
// the first Publish.
func (r *Registry) Session() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ownLocked == nil {
		return ""
	}
	return r.ownLocked.Session
}

// Publish writes this node's entry: info (its ID is set to the node id; a
// different non-empty ID is an error) in lifecycle state JOIN, SERVING, DOWN
// or LEFT, signed, merged locally and gossiped. The first Publish starts a
// session; a state lower than the current one (e.g. JOIN after DOWN) starts
// a new session, because within a session the state can only rise.
// Heartbeats then re-sign the entry every Config.HeartbeatInterval until
// LEFT is published.
//
// Errors wrap ErrBadEntry for a bad state, info or oversized entry, and
// ErrClosed after Close.
func (r *Registry) Publish(info swarm.ServerInfo, state swarm.LifecycleState) error {
	if state < swarm.StateJoin || state > swarm.StateLeft {
		return fmt.Errorf("%w: state %v, want JOIN, SERVING, DOWN or LEFT", ErrBadEntry, state)
	}
	if info.ID != "" && info.ID != r.id {
		return fmt.Errorf("%w: info.ID %q is not this node's id %s", ErrBadEntry, info.ID, r.id)
	}
	info.ID = r.id
	info.Sessions = slices.Clone(info.Sessions)
	info.Endpoints = slices.Clone(info.Endpoints)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeLocked(info, state, r.now())
}

// SetState publishes the current info with a new state. It returns
// ErrNotPublished before the first Publish.
func (r *Registry) SetState(state swarm.LifecycleState) error {
	r.mu.Lock()
	if r.ownLocked == nil {
		r.mu.Unlock()
		return ErrNotPublished
	}
	info := r.ownLocked.Info
	r.mu.Unlock()
	return r.Publish(info, state)
}

// writeLocked signs and merges a new own entry and schedules its broadcast.
func (r *Registry) writeLocked(info swarm.ServerInfo, state swarm.LifecycleState, now time.Time) error {
	if r.ctx.Err() != nil {
		return ErrClosed
	}
	own := r.ownLocked
	body := entryBody{NodeID: r.id, State: state, HeartbeatMs: now.UnixMilli(), Info: info}
	if own == nil || state < own.State || r.supersededLocked >= own.Incarnation {
		floor := r.supersededLocked
		if held, ok := r.gmapLocked.Get(r.id); ok {
			floor = max(floor, held.Incarnation)
		}
		body.Incarnation = max(uint64(now.UnixNano()), floor+1)
		body.Session = newSessionID()
		body.Version = 1
	} else {
		body.Incarnation, body.Session, body.Version = own.Incarnation, own.Session, own.Version+1
	}
	e, err := sealEntry(r.key, body)
	if err != nil {
		return err
	}
	r.ownLocked = &e
	r.mergeLocked(e, now)
	select {
	case r.bcast <- struct{}{}:
	default: // a broadcast is pending; it will send the latest entry
	}
	return nil
}

// newSessionID returns 16 random bytes in hex.
func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go >= 1.24)
	return hex.EncodeToString(b)
}

// Snapshot returns every entry with its effective state (the local
// SUSPECTED overlay and silence-based LEFT applied), sorted by node id.
func (r *Registry) Snapshot() []Entry {
	now := r.now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	entries := r.gmapLocked.Entries()
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		out = append(out, view(e, crdt.Liveness(e, now, r.heardLocked[e.NodeID], r.timing)))
	}
	return out
}

// Get returns one node's entry with its effective state.
func (r *Registry) Get(nodeID string) (Entry, bool) {
	now := r.now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.gmapLocked.Get(nodeID)
	if !ok {
		return Entry{}, false
	}
	return view(e, crdt.Liveness(e, now, r.heardLocked[nodeID], r.timing)), true
}

// Sync exchanges state with up to three random peers now (anti-entropy
// push-pull) and returns nil if at least one exchange succeeded. It returns
// an error wrapping ErrNoPeers when the transport knows no peer. Clients
// call it once after joining to fetch the registry instead of waiting for
// the next anti-entropy round.
func (r *Registry) Sync(ctx context.Context) error {
	peers := r.tr.Peers()
	if len(peers) == 0 {
		return ErrNoPeers
	}
	shufflePeers(peers)
	var errs []error
	for _, p := range peers[:min(3, len(peers))] {
		err := r.exchangeWith(ctx, p)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("registry: sync with %d peers failed: %w", len(errs), errors.Join(errs...))
}

// Leave publishes LEFT for this node's entry and pushes it out (a broadcast
// and a push-pull with up to three peers) before returning; it is a no-op
// before the first Publish. Call it before Close on a graceful shutdown.
func (r *Registry) Leave(ctx context.Context) error {
	r.mu.Lock()
	if r.ownLocked == nil {
		r.mu.Unlock()
		return nil
	}
	info := r.ownLocked.Info
	err := r.writeLocked(info, swarm.StateLeft, r.now())
	var data []byte
	if err == nil {
		data = r.ownLocked.Signed
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	errB := r.tr.Broadcast(ctx, data)
	errS := r.Sync(ctx)
	if errB != nil && errS != nil {
		return fmt.Errorf("registry: announce LEFT: %w", errors.Join(errB, errS))
	}
	return nil
}

// Close stops the registry's goroutines and waits for them; watch channels
// are closed. It does not announce LEFT (call Leave first). It closes the
// transport when the registry created it (Join). It is idempotent.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock() // Watch checks ctx and adds to wg under mu
		r.cancel()
		r.mu.Unlock()
		r.wg.Wait()
		if r.ownsTr {
			r.closeErr = r.tr.Close()
		}
	})
	return r.closeErr
}
