package node

import "errors"

// Sentinel errors, wrapped with details by the functions that return them.
var (
	// ErrBadConfig is returned for an option or configuration out of range.
	ErrBadConfig = errors.New("node: bad config")
	// ErrUncovered is returned (as *UncoveredError) when the routable
	// servers of a model leave blocks unhosted.
	ErrUncovered = errors.New("node: blocks not covered")
	// ErrPlacement is returned when placement cannot give this server a
	// span (its memory cannot hold one block plus R attention caches).
	ErrPlacement = errors.New("node: no span for this server")
	// ErrBadEndpoint is returned for an endpoint the libp2p transport
	// cannot reach (not libp2p://PEERID, or a bad peer id).
	ErrBadEndpoint = errors.New("node: bad libp2p endpoint")
	// ErrUnverified is returned when a server's websocket does not prove
	// that the registry entry advertising it is its own (the info
	// challenge, api.InfoChallengeParam).
	ErrUnverified = errors.New("node: endpoint not verified")
	// ErrMove is returned by Mover.Move when a span move is refused or
	// fails.
	ErrMove = errors.New("node: span move failed")
)
