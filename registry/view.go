package registry

import (
	"time"

	"github.com/swarmllm/swarm/registry/crdt"
	"github.com/swarmllm/swarm/swarm"
)

// Entry is a node's registry entry as this replica sees it.
type Entry struct {
	// NodeID is the node's libp2p peer id.
	NodeID string
	// Session is the id of the node's current life; it changes on restart.
	Session string
	// Incarnation orders the node's lives (session start, unix nanoseconds).
	Incarnation uint64
	// State is the effective state: the announced one (JOIN, SERVING, DOWN,
	// LEFT), or SUSPECTED / LEFT when the node has been silent (see
	// crdt.Liveness). Only SERVING entries are routable.
	State swarm.LifecycleState
	// Announced is the state the node wrote: JOIN, SERVING, DOWN or LEFT.
	Announced swarm.LifecycleState
	// Version counts the node's writes within the incarnation.
	Version uint64
	// Heartbeat is the node's wall clock at its latest write.
	Heartbeat time.Time
	// Info is what the node advertises; empty for a node that serves nothing.
	Info swarm.ServerInfo
}

// Routable reports whether routing may send sessions to the node: it is
// SERVING and not suspected.
func (e Entry) Routable() bool { return e.State == swarm.StateServing }

// Event reports a change of one entry in this replica: a newer entry
// arrived, its effective state changed (SUSPECTED, refuted, LEFT), or it was
// garbage-collected.
type Event struct {
	// Entry is the entry after the change (before removal when Removed).
	Entry Entry
	// Removed is true when the entry was garbage-collected.
	Removed bool
	// At is the local time of the change.
	At time.Time
}

// view converts a CRDT entry for readers, with its effective state at nowMs.
func view(e crdt.Entry, state swarm.LifecycleState) Entry {
	return Entry{
		NodeID:      e.NodeID,
		Session:     e.Session,
		Incarnation: e.Incarnation,
		State:       state,
		Announced:   e.State,
		Version:     e.Version,
		Heartbeat:   time.UnixMilli(e.HeartbeatMs),
		Info:        e.Info,
	}
}
