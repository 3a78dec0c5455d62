// Package registry is the swarm's replicated map node id -> (lifecycle
// state, ServerInfo): a G-Map CRDT (package registry/crdt) gossiped over
// libp2p with GossipSub, plus periodic anti-entropy (full-state push-pull
// with a random peer over the /swarm/registry/sync/1 stream protocol) so that
// late joiners and healed partitions converge. It follows OpenTela's
// registry (paper 000, Sec. 3.2 and 3.4).
//
// Every node writes only its own entry, signed with its libp2p identity key
// in a libp2p signed envelope (domain "swarm-registry-entry"); receivers
// verify the signature and that the signing key is the key of the entry's
// node id, and drop forgeries. Servers Publish their ServerInfo and lifecycle
// state (JOIN, SERVING, DOWN, LEFT) and heartbeat by re-signing it with a
// higher version; clients are members that publish nothing and read
// Snapshot. A silent node is first SUSPECTED (a local view, excluded from
// routing, refuted by a fresh heartbeat), then LEFT after a grace period,
// then garbage-collected after a retention window; the package crdt doc
// explains the lattice, the incarnations that let a restarted node re-join
// with a new session id, and why collected entries cannot come back.
//
// The gossip layer is behind the Transport interface: P2PTransport runs it on
// a libp2p host, memtransport is its in-memory twin with partition, drop and
// delay hooks for deterministic scenario tests.
//
// This package must never import server, client, placement, routing, blocks
// or cmd: the data plane reads the registry, not the other way round.
package registry

import "errors"

// Sentinel errors, wrapped with details by the functions that return them.
var (
	// ErrBadConfig is returned by Config.Validate and the constructors.
	ErrBadConfig = errors.New("registry: bad config")
	// ErrBadEntry is returned for an entry that is malformed, stamped in
	// the future, expired, or otherwise not acceptable.
	ErrBadEntry = errors.New("registry: bad entry")
	// ErrForged is returned for an entry whose signature does not verify or
	// whose signing key is not the key of its node id.
	ErrForged = errors.New("registry: forged entry")
	// ErrNotPublished is returned by SetState before the first Publish.
	ErrNotPublished = errors.New("registry: nothing published yet")
	// ErrNoPeers is returned by Sync when no member is reachable.
	ErrNoPeers = errors.New("registry: no peers to synchronise with")
	// ErrClosed is returned by calls on a closed Registry or Transport.
	ErrClosed = errors.New("registry: closed")
)
