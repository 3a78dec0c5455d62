package crdt

import (
	"bytes"
	"cmp"

	"github.com/swarmllm/swarm/swarm"
)

// Entry is one value of the G-Map: a node's self-description as signed by
// the node. Signed is the exact signed encoding that carries every other
// field; this package treats it as opaque bytes that determine the entry.
type Entry struct {
	// NodeID is the key: the node's libp2p peer id (string form).
	NodeID string
	// Incarnation orders the lives of one node: the session start time in
	// unix nanoseconds, raised above any earlier incarnation of the node.
	Incarnation uint64
	// Session is the random id of this life of the node; it changes on
	// every restart.
	Session string
	// State is the announced lifecycle state: StateJoin, StateServing,
	// StateDown or StateLeft (never StateSuspected, a view only).
	State swarm.LifecycleState
	// Version counts the writes (updates and heartbeats) within the
	// incarnation, starting at 1.
	Version uint64
	// HeartbeatMs is the owner's wall clock at the write, unix milliseconds.
	HeartbeatMs int64
	// Info is the server description; empty for a node that serves nothing.
	Info swarm.ServerInfo
	// Signed is the owner-signed encoding of the entry.
	Signed []byte
}

// Compare orders two values of the same key: -1 if a < b, 0 if equal, +1 if
// a > b, by (Incarnation, State, Version, HeartbeatMs, Signed). It is a total
// order on entries whose Signed bytes determine them.
func Compare(a, b Entry) int {
	if c := cmp.Compare(a.Incarnation, b.Incarnation); c != 0 {
		return c
	}
	if c := cmp.Compare(a.State, b.State); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Version, b.Version); c != 0 {
		return c
	}
	if c := cmp.Compare(a.HeartbeatMs, b.HeartbeatMs); c != 0 {
		return c
	}
	return bytes.Compare(a.Signed, b.Signed)
}

// Join returns the least upper bound of two values of the same key: the
// larger under Compare.
func Join(a, b Entry) Entry {
	if Compare(a, b) >= 0 {
		return a
	}
	return b
}
