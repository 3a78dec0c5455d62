package registry

import "context"

// Transport carries registry messages between members: best-effort
// broadcasts (gossip) and request/response exchanges with one peer
// (anti-entropy). P2PTransport runs on libp2p; memtransport is the in-memory
// twin for deterministic tests. Implementations are safe for concurrent use.
type Transport interface {
	// Broadcast sends data (one signed entry) towards every member; delivery
	// is best effort.
	Broadcast(ctx context.Context, data []byte) error
	// Exchange sends data (this member's state) to peer and returns the
	// peer's reply (the entries it holds newer).
	Exchange(ctx context.Context, peer string, data []byte) ([]byte, error)
	// Peers lists the members this one can try to exchange with now.
	Peers() []string
	// Inbound delivers the broadcasts and exchange requests of other
	// members. The channel is never closed; stop reading when done.
	Inbound() <-chan Message
	// Close stops the transport; later calls return ErrClosed.
	Close() error
}

// Message is one inbound broadcast or exchange request.
type Message struct {
	// From is the sender's node id (for a broadcast, the member that
	// forwarded it, not necessarily its author).
	From string
	// Data is the payload: one signed entry for a broadcast, a state for an
	// exchange request.
	Data []byte
	// Reply is nil for a broadcast. For an exchange request the receiver
	// must call it exactly once, with the reply or an error.
	Reply func(data []byte, err error)
}

// PeerNotifier is an optional Transport capability: NewPeers reports members
// as they connect, and the registry exchanges state with each at once
// ("upon connection, the node exchanges state with the bootstrap peer",
// OpenTela, paper 000 Sec. 3.4) rather than at the next anti-entropy round.
type PeerNotifier interface {
	// NewPeers delivers the node id of each newly connected member; the
	// channel is never closed.
	NewPeers() <-chan string
}
