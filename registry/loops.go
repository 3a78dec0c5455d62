package registry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/swarmllm/swarm/registry/crdt"
	"github.com/swarmllm/swarm/swarm"
)

// exchangeTimeout bounds one anti-entropy exchange.
const exchangeTimeout = 10 * time.Second

// inboundLoop merges gossiped entries and answers exchange requests.
func (r *Registry) inboundLoop() {
	defer r.wg.Done()
	in := r.tr.Inbound()
	for {
		select {
		case <-r.ctx.Done():
			return
		case msg := <-in:
			if msg.Reply == nil {
				if _, _, err := r.ingest(msg.Data, r.now(), true); err != nil {
					r.log.Debug("registry: dropped gossiped entry", "from", msg.From, "err", err)
				}
				continue
			}
			r.handleExchange(msg)
		}
	}
}

// tickLoop heartbeats this node's entry, and sweeps the replica for
// liveness changes and garbage.
func (r *Registry) tickLoop() {
	defer r.wg.Done()
	heartbeat := time.NewTicker(r.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	sweep := time.NewTicker(max(min(r.cfg.SuspectAfter/8, r.cfg.HeartbeatInterval), 10*time.Millisecond))
	defer sweep.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-heartbeat.C:
			r.mu.Lock()
			if own := r.ownLocked; own != nil && own.State != swarm.StateLeft {
				if err := r.writeLocked(own.Info, own.State, r.now()); err != nil && !errors.Is(err, ErrClosed) {
					r.log.Warn("registry: heartbeat failed", "err", err)
				}
			}
			r.mu.Unlock()
		case <-sweep.C:
			r.mu.Lock()
			r.sweepLocked(r.now())
			r.mu.Unlock()
		}
	}
}

// antiEntropyLoop exchanges the full state with a random peer every
// AntiEntropyInterval (jittered by +-50% so that members do not
// synchronise), and with every newly connected member when the transport
// reports them (PeerNotifier).
func (r *Registry) antiEntropyLoop() {
	defer r.wg.Done()
	var newPeers <-chan string
	if pn, ok := r.tr.(PeerNotifier); ok {
		newPeers = pn.NewPeers()
	}
	t := time.NewTimer(r.cfg.AntiEntropyInterval/2 + rand.N(r.cfg.AntiEntropyInterval))
	defer t.Stop()
	for {
		var p string
		select {
		case <-r.ctx.Done():
			return
		case p = <-newPeers:
		case <-t.C:
			t.Reset(r.cfg.AntiEntropyInterval/2 + rand.N(r.cfg.AntiEntropyInterval))
			peers := r.tr.Peers()
			if len(peers) == 0 {
				continue
			}
			p = peers[rand.IntN(len(peers))]
		}
		if err := r.exchangeWith(r.ctx, p); err != nil {
			r.log.Debug("registry: anti-entropy exchange failed", "peer", p, "err", err)
		}
	}
}

// broadcastLoop gossips this node's latest entry whenever it changes.
func (r *Registry) broadcastLoop() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.bcast:
		}
		r.mu.Lock()
		var data []byte
		if r.ownLocked != nil {
			data = r.ownLocked.Signed
		}
		r.mu.Unlock()
		if data == nil {
			continue
		}
		if err := r.tr.Broadcast(r.ctx, data); err != nil && r.ctx.Err() == nil {
			r.log.Debug("registry: broadcast failed", "err", err)
		}
	}
}

// exchangeWith pushes this replica's state to peer and merges the entries
// the peer holds newer.
func (r *Registry) exchangeWith(ctx context.Context, peer string) error {
	r.mu.Lock()
	req, err := encodeState(r.gmapLocked.Entries())
	r.mu.Unlock()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	resp, err := r.tr.Exchange(ctx, peer, req)
	if err != nil {
		return fmt.Errorf("registry: exchange with %s: %w", peer, err)
	}
	entries, err := decodeState(resp)
	if err != nil {
		return fmt.Errorf("registry: exchange with %s: %w", peer, err)
	}
	now := r.now()
	for _, data := range entries {
		if _, _, err := r.ingest(data, now, false); err != nil {
			r.log.Debug("registry: dropped entry from exchange", "peer", peer, "err", err)
		}
	}
	return nil
}

// handleExchange answers an anti-entropy request: merge the sender's state,
// reply with the entries held newer than the sender's.
func (r *Registry) handleExchange(msg Message) {
	entries, err := decodeState(msg.Data)
	if err != nil {
		msg.Reply(nil, err)
		return
	}
	now := r.now()
	theirs := crdt.NewMap()
	for _, data := range entries {
		e, _, err := r.ingest(data, now, false)
		if err != nil {
			r.log.Debug("registry: dropped entry from exchange", "peer", msg.From, "err", err)
			continue
		}
		theirs.Merge(e)
	}
	r.mu.Lock()
	newer := r.gmapLocked.NewerThan(theirs)
	r.mu.Unlock()
	msg.Reply(encodeState(newer))
}

// ingest merges one signed entry received from a peer. It returns the
// decoded entry and whether the replica changed. Entries that could not
// change the replica are not verified; entries that would are verified
// (ErrForged, ErrBadEntry), refused when stamped in the future
// (ErrBadEntry) and silently ignored when already collectable (so that GC'd
// entries do not come back).
//
// direct marks an entry gossiped by its owner just now (a heartbeat), not
// relayed by anti-entropy: its stamp tells the owner's clock offset.
func (r *Registry) ingest(data []byte, now time.Time, direct bool) (crdt.Entry, bool, error) {
	cand, err := peekEntry(data)
	if err != nil {
		return crdt.Entry{}, false, err
	}
	r.mu.Lock()
	held, ok := r.gmapLocked.Get(cand.NodeID)
	r.mu.Unlock()
	if ok && crdt.Compare(held, cand) >= 0 {
		return cand, false, nil
	}
	e, err := openEntry(data)
	if err != nil {
		return crdt.Entry{}, false, err
	}
	nowMs := now.UnixMilli()
	future := crdt.FromFuture(e, nowMs, r.timing)
	if (direct || future) && e.NodeID != r.id { // delay never makes a stamp look newer
		r.mu.Lock()
		r.noteClockLocked(e.NodeID, e.HeartbeatMs, nowMs, now)
		r.mu.Unlock()
	}
	if future {
		return crdt.Entry{}, false, fmt.Errorf("%w: node %s stamped its entry %v ahead of this clock (more than --max-clock-skew %v)",
			ErrBadEntry, e.NodeID, time.Duration(e.HeartbeatMs-nowMs)*time.Millisecond, r.cfg.MaxClockSkew)
	}
	if crdt.Collectable(e, nowMs, r.timing) {
		return e, false, nil
	}
	r.mu.Lock()
	changed := r.mergeLocked(e, now)
	r.mu.Unlock()
	return e, changed, nil
}

// mergeLocked joins e into the replica, records when it arrived, notices
// other lives of this node's own id, and notifies watchers.
func (r *Registry) mergeLocked(e crdt.Entry, now time.Time) bool {
	if !r.gmapLocked.Merge(e) {
		return false
	}
	nowMs := now.UnixMilli()
	r.heardLocked[e.NodeID] = nowMs
	if e.NodeID == r.id && r.ownLocked != nil && string(e.Signed) != string(r.ownLocked.Signed) &&
		e.Incarnation >= r.ownLocked.Incarnation {
		r.supersededLocked = max(r.supersededLocked, e.Incarnation)
		r.log.Warn("registry: another life of this node id is newer; starting a new session at the next heartbeat "+
			"(is another process using the same --identity?)", "session", e.Session)
	}
	r.notifyLocked(e, crdt.Liveness(e, nowMs, nowMs, r.timing), false, now)
	return true
}

// sweepLocked reports effective-state changes (SUSPECTED, refuted, LEFT by
// silence) and garbage-collects collectable entries.
func (r *Registry) sweepLocked(now time.Time) {
	nowMs := now.UnixMilli()
	for _, e := range r.gmapLocked.Entries() {
		if crdt.Collectable(e, nowMs, r.timing) {
			r.gmapLocked.Remove(e.NodeID)
			delete(r.heardLocked, e.NodeID)
			r.notifyLocked(e, swarm.StateLeft, true, now)
			delete(r.shownLocked, e.NodeID)
			continue
		}
		st := crdt.Liveness(e, nowMs, r.heardLocked[e.NodeID], r.timing)
		if st != r.shownLocked[e.NodeID] {
			r.notifyLocked(e, st, false, now)
		}
	}
}

// notifyLocked records the shown state and queues an event for every
// watcher.
func (r *Registry) notifyLocked(e crdt.Entry, state swarm.LifecycleState, removed bool, now time.Time) {
	r.shownLocked[e.NodeID] = state
	ev := Event{Entry: view(e, state), Removed: removed, At: now}
	for w := range r.watchersLocked {
		w.push(ev)
	}
	close(r.changedLocked)
	r.changedLocked = make(chan struct{})
}

func shufflePeers(p []string) {
	rand.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
}
