// Package crdt is the pure core of the registry: the G-Map CRDT of node
// entries, its join (merge), and the liveness view of an entry at a given
// time. It does no I/O, starts no goroutines and reads no clock: time comes
// in as unix milliseconds (etcd-raft style), so the registry, its tests and
// the simulator run the same code.
//
// # The lattice
//
// The map is keyed by node id (a libp2p peer id); each node writes only its
// own entry. Values of one key are totally ordered by the tuple
//
//	(Incarnation, State, Version, HeartbeatMs, Signed)
//
// compared lexicographically, with State in the OpenTela order JOIN <
// SERVING < DOWN < LEFT (paper 000, Sec. 3.4) and Signed (the owner-signed
// encoding, which determines the entry) compared bytewise as the last tie
// break. The join of two values is the larger one; the join of two maps is
// the key-wise join. Maximum under a total order is commutative, associative
// and idempotent, and the key-wise join of such maps is again a
// join-semilattice, so replicas that have seen the same set of entries hold
// the same map whatever the order and multiplicity of delivery.
//
// Incarnation comes first so that a node that restarts can re-join after its
// previous life was marked LEFT: each life (session) starts with a fresh
// session id and an incarnation larger than any earlier one of the same node
// (the session start time in unix nanoseconds, raised above any incarnation
// of its own id it has already seen). Within one incarnation the state can
// only rise: "higher lifecycle state wins, then higher version". A node that
// goes back to JOIN (e.g. after DOWN) therefore starts a new incarnation.
//
// # Liveness and garbage collection
//
// Nodes heartbeat by re-signing their entry with a higher Version and a fresh
// HeartbeatMs (the owner's wall clock). Liveness is a view, not a write:
// Liveness(e, now) reports SUSPECTED once the entry is silent for longer
// than SuspectAfter (excluded from routing, refuted by any fresh heartbeat),
// and LEFT once it is silent for longer than LeftAfter. Because the silence
// is measured against the entry's own HeartbeatMs, every replica marks the
// same entry LEFT at the same moment without exchanging a message, and no
// node can evict another (an eviction would need the evictee's signature).
// SUSPECTED may in addition be raised locally from the replica's own
// receive time (see Liveness).
//
// An entry is collectable once it has been LEFT for Retention: an announced
// LEFT when now - HeartbeatMs > Retention, a silent entry when now -
// HeartbeatMs > LeftAfter + Retention. GC removes collectable entries, and
// the registry refuses to merge an incoming entry that is collectable, so a
// replica that still holds an old entry cannot resurrect it in one that has
// dropped it: the decision depends only on the entry and the receiver's
// clock. The assumption is that clocks are synchronised to within
// MaxClockSkew, much less than SuspectAfter (NTP gives milliseconds); entries
// stamped further in the future are refused.
//
// This package must never import net, os, time, sync, libp2p or any other
// package of this repository except the vocabulary package swarm.
package crdt
