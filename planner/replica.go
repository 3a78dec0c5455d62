package planner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/lni/vfs"
)

// shardID is the planner group's Raft shard (one group per swarm).
const shardID = 1

// Replica is one member of the planner group, running on a libp2p host.
// All methods are safe for concurrent use.
type Replica struct {
	h         host.Host
	nh        *dragonboat.NodeHost
	opts      options
	log       *slog.Logger
	members   []peer.ID // the initial members, sorted
	replicaID uint64

	leaderSeen atomic.Bool // a leader was ever known (see serveJoin)

	mu sync.Mutex // guards the fields below
	// latest is the state after the last local apply.
	latest   State
	watchers map[chan Plan]struct{}
	closed   bool
}

// Start runs a replica of the planner group on h. members are the peer ids
// of the group's replicas (1, 3 or 5, h's own included); every replica is
// started with the same list, in any order. A host runs at most one
// replica (the stream protocols are registered once per host).
//
// The log and snapshots live in memory. A replica restarted with empty
// state asks the other members, one at a time, to take it back: a member
// of a group that has had a leader removes the replica's old Raft id and
// adds it under a new one (Raft ids are never reused), and the replica
// catches up from the leader's log or snapshot. When no member has ever
// seen a leader (the group is forming) or none answers, the replica
// bootstraps the group with its initial id.
func Start(ctx context.Context, h host.Host, members []peer.ID, opts ...Option) (*Replica, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	sorted, err := checkMembers(h.ID(), members)
	if err != nil {
		return nil, err
	}
	routeDragonboatLogs()
	r := &Replica{h: h, opts: o, log: o.logger, members: sorted, watchers: map[chan Plan]struct{}{}}
	nh, err := dragonboat.NewNodeHost(config.NodeHostConfig{
		NodeHostDir:       "planner",
		RTTMillisecond:    uint64(o.rtt / time.Millisecond),
		RaftAddress:       h.ID().String(),
		RaftEventListener: (*leaderListener)(r),
		Expert: config.ExpertConfig{
			FS:               vfs.NewMem(),
			LogDBFactory:     tan.Factory,
			LogDB:            smallLogDB(),
			Engine:           config.EngineConfig{ExecShards: 1, CommitShards: 1, ApplyShards: 1, SnapshotShards: 1, CloseShards: 1},
			TransportFactory: &transportFactory{h: h, log: o.logger},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("planner: start node host: %w", err)
	}
	r.nh = nh

	initial := map[uint64]dragonboat.Target{}
	for i, m := range sorted {
		initial[uint64(i+1)] = m.String()
		if m == h.ID() {
			r.replicaID = uint64(i + 1)
		}
	}
	join := false
	if len(sorted) > 1 {
		id, err := r.rejoin(ctx)
		if err != nil {
			nh.Close()
			return nil, err
		}
		if id != 0 {
			r.replicaID, initial, join = id, nil, true
		}
	}
	create := func(uint64, uint64) sm.IStateMachine { return &fsm{changed: r.applied} }
	if err := nh.StartReplica(initial, join, create, config.Config{
		ReplicaID:           r.replicaID,
		ShardID:             shardID,
		CheckQuorum:         true,
		PreVote:             true,
		ElectionRTT:         o.electionRTT,
		HeartbeatRTT:        o.heartbeatRTT,
		SnapshotEntries:     o.snapshotEntries,
		CompactionOverhead:  o.compaction,
		OrderedConfigChange: true,
	}); err != nil {
		nh.Close()
		return nil, fmt.Errorf("planner: start replica %d: %w", r.replicaID, err)
	}
	h.SetStreamHandler(JoinProtocol, r.serveJoin)
	r.log.Info("planner: replica started", "replica", r.replicaID, "members", len(sorted), "rejoined", join)
	return r, nil
}

// smallLogDB sizes the log store for one small shard: dragonboat's default
// gives tan a 128 MiB write buffer per LogDB shard (16 of them, allocated
// up front); a plan command is a few KiB, and tan grows a buffer for a
// larger write on its own.
func smallLogDB() config.LogDBConfig {
	c := config.GetTinyMemLogDBConfig()
	c.Shards = 1
	c.KVWriteBufferSize = 64 << 10
	return c
}

// checkMembers validates the member list and returns it sorted.
func checkMembers(self peer.ID, members []peer.ID) ([]peer.ID, error) {
	if n := len(members); n != 1 && n != 3 && n != 5 {
		return nil, fmt.Errorf("%w: %d members (want 1, 3 or 5)", ErrBadConfig, n)
	}
	sorted := slices.Clone(members)
	slices.Sort(sorted)
	for i, m := range sorted {
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("%w: member %d: %w", ErrBadConfig, i, err)
		}
		if i > 0 && sorted[i-1] == m {
			return nil, fmt.Errorf("%w: member %s listed twice", ErrBadConfig, m)
		}
	}
	if !slices.Contains(sorted, self) {
		return nil, fmt.Errorf("%w: this host %s is not among the %d members", ErrBadConfig, self, len(sorted))
	}
	return sorted, nil
}

// ID returns the replica's Raft id in the group (1..n for the initial
// members, larger after a rejoin).
func (r *Replica) ID() uint64 { return r.replicaID }

// applied is the state machine's change hook: it records the state and
// hands the plan to every watcher, replacing one the watcher has not read.
func (r *Replica) applied(s State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest = s
	for ch := range r.watchers {
		offerLatest(ch, s.Plan.Clone())
	}
}

// offerLatest puts p into the one-slot channel ch, dropping an unread
// older value; only the caller (holding Replica.mu) sends on ch.
func offerLatest(ch chan Plan, p Plan) {
	select {
	case <-ch:
	default:
	}
	ch <- p
}

// Watch returns a channel that receives the current plan as this replica
// has applied it, then the plan after every applied change. A slow reader
// sees only the latest plan (older unread ones are replaced). The channel
// is closed when ctx ends or the replica closes.
func (r *Replica) Watch(ctx context.Context) <-chan Plan {
	ch := make(chan Plan, 1)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		close(ch)
		return ch
	}
	r.watchers[ch] = struct{}{}
	ch <- r.latest.Plan.Clone()
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.watchers[ch]; ok {
			delete(r.watchers, ch)
			close(ch)
		}
	})
	return ch
}

// Propose commits plan as the next epoch; plan.Epoch must be the current
// epoch + 1 and the current epoch must not be active (ErrWrongEpoch,
// ErrEpochActive otherwise). Any replica may propose: a follower forwards
// to the leader. plan.ProposalID must be unique to this proposal (a retry
// after a lost reply is recognised by it). Status and Progress are set by
// the state machine. It retries through leader changes until ctx ends.
func (r *Replica) Propose(ctx context.Context, plan Plan) error {
	if err := validatePlan(plan); err != nil {
		return err
	}
	return r.propose(ctx, command{Op: opPropose, Plan: &plan})
}

// Report records server's progress in epoch (ErrUnknownEpoch,
// ErrStaleEpoch, ErrUnknownServer, ErrEpochClosed when it does not fit the
// committed state). The epoch becomes done when every server with a move
// reported MoveDone.
func (r *Replica) Report(ctx context.Context, epoch uint64, server string, p Progress) error {
	return r.propose(ctx, command{Op: opProgress, Epoch: epoch, Server: server, Progress: &p})
}

// Abort stops the active epoch: servers finish the move they are in and
// start no other; the next epoch is planned from the live spans. reason is
// at most MaxDetailBytes bytes.
func (r *Replica) Abort(ctx context.Context, epoch uint64, reason string) error {
	return r.propose(ctx, command{Op: opAbort, Epoch: epoch, Reason: reason})
}

// propose commits c, retrying through leader changes until ctx ends.
func (r *Replica) propose(ctx context.Context, c command) error {
	data := c.encode()
	if _, err := decodeCommand(data); err != nil {
		return err // malformed: refuse it here rather than through the log
	}
	var res sm.Result
	err := r.retry(ctx, func(actx context.Context) (err error) {
		res, err = r.nh.SyncPropose(actx, r.nh.GetNoOPSession(shardID), data)
		return err
	})
	if err != nil {
		return fmt.Errorf("planner: %s: %w", c.Op, err)
	}
	return resultError(res)
}

// Current returns the committed plan after a linearizable read (Raft read
// index through the leader): every plan committed before the call is
// seen. Epoch 0 means no plan was committed yet.
func (r *Replica) Current(ctx context.Context) (Plan, error) {
	var v any
	err := r.retry(ctx, func(actx context.Context) (err error) {
		v, err = r.nh.SyncRead(actx, shardID, nil)
		return err
	})
	if err != nil {
		return Plan{}, fmt.Errorf("planner: read plan: %w", err)
	}
	return v.(State).Plan, nil
}

// retry calls attempt with a context bounded by one attempt's timeout
// until it succeeds, fails for good, or ctx ends. Retried proposals are
// safe: every command is idempotent in the state machine.
func (r *Replica) retry(ctx context.Context, attempt func(context.Context) error) error {
	tick := time.NewTicker(r.opts.rtt)
	defer tick.Stop()
	for {
		if r.isClosed() {
			return ErrClosed
		}
		actx, cancel := context.WithTimeout(ctx, r.opts.attemptTimeout())
		err := attempt(actx)
		cancel()
		if err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// transient reports whether a dragonboat error may clear after a leader
// change.
func transient(err error) bool {
	return errors.Is(err, dragonboat.ErrShardNotReady) || errors.Is(err, dragonboat.ErrSystemBusy) ||
		errors.Is(err, dragonboat.ErrTimeout) || errors.Is(err, dragonboat.ErrAborted) ||
		errors.Is(err, dragonboat.ErrCanceled)
}

// Leader returns the peer id of the leader as this replica knows it, and
// false when it knows none.
func (r *Replica) Leader() (peer.ID, bool) {
	id, _, ok, err := r.nh.GetLeaderID(shardID)
	if err != nil || !ok {
		return "", false
	}
	addr, ok := r.membership()[id]
	if !ok {
		return "", false
	}
	pid, err := peer.Decode(addr)
	return pid, err == nil
}

// membership returns this replica's local view of the voting members:
// Raft id -> peer id string.
func (r *Replica) membership() map[uint64]string {
	info := r.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true})
	for _, s := range info.ShardInfoList {
		if s.ShardID == shardID {
			return s.Replicas
		}
	}
	return nil
}

func (r *Replica) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Close stops the replica: it leaves the group's traffic (the group goes
// on without it while a quorum remains), closes the watchers and returns
// when dragonboat has stopped or ctx ends. The host is left open.
func (r *Replica) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for ch := range r.watchers {
		delete(r.watchers, ch)
		close(ch)
	}
	r.mu.Unlock()
	r.h.RemoveStreamHandler(JoinProtocol)
	r.h.RemoveStreamHandler(PlanProtocol)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.nh.Close()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("planner: close replica %d: %w", r.replicaID, ctx.Err())
	}
}

// leaderListener is dragonboat's leader-change callback on a Replica.
type leaderListener Replica

// LeaderUpdated records that the group has had a leader.
func (l *leaderListener) LeaderUpdated(info raftio.LeaderInfo) {
	if info.ShardID == shardID && info.LeaderID != 0 {
		l.leaderSeen.Store(true)
	}
}
