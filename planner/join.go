package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/lni/dragonboat/v4"
)

// JoinProtocol is the stream protocol a restarted replica uses to ask a
// member to take it back into the group: one JSON request, one JSON reply.
const JoinProtocol protocol.ID = "/swarm/raft/join/1"

// maxJoinBytes bounds a join request or reply.
const maxJoinBytes = 4 << 10

// joinRequest asks for a new Raft id for the requesting peer.
type joinRequest struct {
	V     int    `json:"v"`
	Shard uint64 `json:"shard"`
}

// Join reply statuses.
const (
	// joinAdded: the group removed the peer's old Raft ids and added it
	// as ReplicaID.
	joinAdded = "added"
	// joinForming: this member has never seen a leader; the group has
	// committed nothing, so the requester may bootstrap with its initial id.
	joinForming = "forming"
	// joinFailed: the group exists but the membership change failed.
	joinFailed = "failed"
)

// joinReply answers a joinRequest.
type joinReply struct {
	Status    string `json:"status"`
	ReplicaID uint64 `json:"replica_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

// rejoin asks the other members, one at a time in id order, to take this
// (empty) replica back. It returns the new Raft id, or 0 when every member
// answered "forming" or could not be reached (then the replica bootstraps).
// A member answering "failed" makes it fail with ErrJoin: the group exists,
// and bootstrapping would split it.
func (r *Replica) rejoin(ctx context.Context) (uint64, error) {
	for _, m := range r.members {
		if m == r.h.ID() {
			continue
		}
		rep, err := r.askJoin(ctx, m)
		if ctx.Err() != nil {
			return 0, fmt.Errorf("planner: asking the members to join: %w", ctx.Err())
		}
		if err != nil {
			r.log.Debug("planner: member did not answer the join request", "member", m, "err", err)
			continue
		}
		switch rep.Status {
		case joinAdded:
			if rep.ReplicaID == 0 {
				return 0, fmt.Errorf("%w: member %s added this replica as id 0", ErrJoin, m)
			}
			return rep.ReplicaID, nil
		case joinFailed:
			return 0, fmt.Errorf("%w: member %s: %s", ErrJoin, m, rep.Error)
		}
	}
	return 0, nil
}

// askJoin sends one join request to member m.
func (r *Replica) askJoin(ctx context.Context, m peer.ID) (joinReply, error) {
	// The member may spend up to its join timeout on the change.
	ctx, cancel := context.WithTimeout(ctx, r.opts.joinTimeout+5*time.Second)
	defer cancel()
	s, err := r.h.NewStream(network.WithAllowLimitedConn(ctx, limitedReason), m, JoinProtocol)
	if err != nil {
		return joinReply{}, fmt.Errorf("open %s: %w", JoinProtocol, err)
	}
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	if err := json.NewEncoder(s).Encode(joinRequest{V: 1, Shard: shardID}); err != nil {
		_ = s.Reset()
		return joinReply{}, fmt.Errorf("send join request: %w", err)
	}
	var rep joinReply
	if err := json.NewDecoder(io.LimitReader(s, maxJoinBytes)).Decode(&rep); err != nil {
		_ = s.Reset()
		return joinReply{}, fmt.Errorf("read join reply: %w", err)
	}
	return rep, nil
}

// serveJoin answers a restarted member's join request.
func (r *Replica) serveJoin(s network.Stream) {
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.joinTimeout)
	defer cancel()
	_ = s.SetDeadline(time.Now().Add(r.opts.joinTimeout + time.Second))
	var req joinRequest
	if err := json.NewDecoder(io.LimitReader(s, maxJoinBytes)).Decode(&req); err != nil {
		_ = s.Reset()
		return
	}
	rep := r.handleJoin(ctx, s.Conn().RemotePeer(), req)
	if rep.Status == joinFailed {
		r.log.Warn("planner: could not take a member back", "member", s.Conn().RemotePeer(), "err", rep.Error)
	}
	_ = json.NewEncoder(s).Encode(rep)
}

// handleJoin removes from the group every Raft id of the (authenticated)
// peer from and adds it under a new id. Removing first keeps a quorum
// reachable: adding first would count a replica that has not started.
func (r *Replica) handleJoin(ctx context.Context, from peer.ID, req joinRequest) joinReply {
	fail := func(format string, args ...any) joinReply {
		return joinReply{Status: joinFailed, Error: fmt.Sprintf(format, args...)}
	}
	switch {
	case req.V != 1 || req.Shard != shardID:
		return fail("join request version %d for shard %d (want version 1, shard %d)", req.V, req.Shard, shardID)
	case !r.isMember(from):
		return fail("peer %s is not a member of the planner group", from)
	case !r.leaderSeen.Load():
		return joinReply{Status: joinForming}
	}
	newID, err := r.readmit(ctx, from)
	if err != nil {
		return fail("membership change: %v", err)
	}
	r.log.Info("planner: took a member back under a new id", "member", from, "replica", newID)
	return joinReply{Status: joinAdded, ReplicaID: newID}
}

// readmit runs the membership changes one at a time, re-reading the
// membership after each (ordered config changes: a change based on a stale
// membership is rejected and retried), until from is a member under a new
// id only.
func (r *Replica) readmit(ctx context.Context, from peer.ID) (uint64, error) {
	var newID uint64
	for range 16 { // at most a few deletes and one add; the rest are rejected retries
		var m *dragonboat.Membership
		if err := r.retry(ctx, func(actx context.Context) (err error) {
			m, err = r.nh.SyncGetShardMembership(actx, shardID)
			return err
		}); err != nil {
			return 0, err
		}
		if newID != 0 && m.Nodes[newID] == from.String() && len(idsOf(m, from)) == 1 {
			return newID, nil
		}
		var change func(context.Context) error
		if old := idsOf(m, from); len(old) > 0 && old[0] != newID {
			change = func(actx context.Context) error {
				return r.nh.SyncRequestDeleteReplica(actx, shardID, old[0], m.ConfigChangeID)
			}
		} else {
			if newID == 0 {
				newID = nextReplicaID(m)
			}
			change = func(actx context.Context) error {
				return r.nh.SyncRequestAddReplica(actx, shardID, newID, from.String(), m.ConfigChangeID)
			}
		}
		if err := r.retry(ctx, change); err != nil && !errors.Is(err, dragonboat.ErrRejected) {
			return 0, err
		}
	}
	return 0, fmt.Errorf("membership of %s still changing after 16 steps", from)
}

// idsOf returns the voting Raft ids of peer p in m, in increasing order.
func idsOf(m *dragonboat.Membership, p peer.ID) []uint64 {
	var ids []uint64
	for id, addr := range m.Nodes {
		if addr == p.String() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// nextReplicaID returns an id above every id the group has used (Raft ids
// are never reused).
func nextReplicaID(m *dragonboat.Membership) uint64 {
	var top uint64
	for _, ids := range []map[uint64]string{m.Nodes, m.NonVotings, m.Witnesses} {
		for id := range ids {
			top = max(top, id)
		}
	}
	for id := range m.Removed {
		top = max(top, id)
	}
	return top + 1
}

// isMember reports whether p is one of the initial members.
func (r *Replica) isMember(p peer.ID) bool { return slices.Contains(r.members, p) }
