package crdt

import "github.com/swarmllm/swarm/swarm"

// Timing holds the liveness parameters in milliseconds (the registry's
// Config converts its durations).
type Timing struct {
	// SuspectAfterMs is the silence after which a node is SUSPECTED.
	SuspectAfterMs int64
	// LeftAfterMs is the silence after which a node is LEFT (> SuspectAfterMs).
	LeftAfterMs int64
	// RetentionMs is how long LEFT entries are kept before collection.
	RetentionMs int64
	// MaxClockSkewMs is the clock difference between nodes tolerated; the
	// silence measured on the owner's clock must exceed SuspectAfterMs by
	// this much before it alone raises SUSPECTED.
	MaxClockSkewMs int64
}

// Liveness returns the state a replica shows for e at time nowMs (unix
// milliseconds): JOIN, SERVING, DOWN, SUSPECTED or LEFT.
//
//   - an announced LEFT stays LEFT;
//   - silent on the owner's clock for more than LeftAfterMs: LEFT (every
//     replica decides this identically, from the entry alone);
//   - silent for more than SuspectAfterMs on this replica's clock since the
//     entry arrived (heardMs, the local receive time), or for more than
//     SuspectAfterMs + MaxClockSkewMs on the owner's clock: SUSPECTED (a
//     local view, refuted by the next heartbeat);
//   - otherwise the announced state.
//
// Pass heardMs = e.HeartbeatMs when no receive time is known.
func Liveness(e Entry, nowMs, heardMs int64, t Timing) swarm.LifecycleState {
	if e.State == swarm.StateLeft {
		return swarm.StateLeft
	}
	silence := nowMs - e.HeartbeatMs
	if silence > t.LeftAfterMs {
		return swarm.StateLeft
	}
	if nowMs-heardMs > t.SuspectAfterMs || silence > t.SuspectAfterMs+t.MaxClockSkewMs {
		return swarm.StateSuspected
	}
	return e.State
}

// Collectable reports whether e may be dropped at nowMs: it has been LEFT
// for longer than the retention window. The registry also refuses incoming
// entries that are collectable, which is what keeps a collected entry from
// coming back.
func Collectable(e Entry, nowMs int64, t Timing) bool {
	silence := nowMs - e.HeartbeatMs
	if e.State == swarm.StateLeft {
		return silence > t.RetentionMs
	}
	return silence > t.LeftAfterMs+t.RetentionMs
}

// FromFuture reports whether e is stamped further ahead of nowMs than the
// tolerated clock skew; such entries are refused (they would otherwise stay
// fresh for longer than they are alive).
func FromFuture(e Entry, nowMs int64, t Timing) bool {
	return e.HeartbeatMs > nowMs+t.MaxClockSkewMs
}

// GC removes the collectable entries of m and returns their ids, sorted.
func GC(m *Map, nowMs int64, t Timing) []string {
	var gone []string
	for _, e := range m.Entries() {
		if Collectable(e, nowMs, t) {
			m.Remove(e.NodeID)
			gone = append(gone, e.NodeID)
		}
	}
	return gone
}
