package api

import (
	"fmt"
	"strings"
)

// libp2p stream protocols a server registers on its node (the same session
// protocol as the websocket of InferencePath, for servers reachable only
// through libp2p: behind a NAT, through a circuit relay).
const (
	// InferenceProtocol carries wire frames back to back on a libp2p
	// stream (NewStream), exactly as the websocket of InferencePath
	// carries them one per message.
	InferenceProtocol = "/swarm/inference/1"
	// InfoProtocol answers a new stream with the Info document as JSON
	// (what GET InfoPath answers) and closes it; the client writes nothing.
	InfoProtocol = "/swarm/info/1"
)

// P2PScheme starts the URLs of endpoints reached over libp2p streams.
const P2PScheme = "libp2p://"

// P2PEndpoint returns the Endpoint of a server reached over libp2p streams
// by its peer id: Inference is "libp2p://PEERID/swarm/inference/1" and Info
// "libp2p://PEERID/swarm/info/1". The strings name the server in routes,
// logs and stats; a libp2p dialer opens the protocols on the peer.
func P2PEndpoint(peerID string) Endpoint {
	return Endpoint{
		Inference: P2PScheme + peerID + InferenceProtocol,
		Info:      P2PScheme + peerID + InfoProtocol,
	}
}

// Peer returns the peer id of an endpoint made by P2PEndpoint, and false
// for a websocket endpoint.
func (e Endpoint) Peer() (string, bool) {
	rest, ok := strings.CutPrefix(e.Inference, P2PScheme)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, InferenceProtocol)
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// ParseP2PEndpoint parses "libp2p://PEERID[/swarm/inference/1]" into the
// Endpoint P2PEndpoint gives. It checks the syntax only, not the peer id's
// encoding; errors wrap ErrBadAddress.
func ParseP2PEndpoint(addr string) (Endpoint, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(addr), P2PScheme)
	if !ok {
		return Endpoint{}, fmt.Errorf("%w: %q: want %sPEERID", ErrBadAddress, addr, P2PScheme)
	}
	id := strings.TrimSuffix(strings.TrimSuffix(rest, "/"), InferenceProtocol)
	if id == "" || strings.Contains(id, "/") {
		return Endpoint{}, fmt.Errorf("%w: %q: want %sPEERID with a peer id and no other path", ErrBadAddress, addr, P2PScheme)
	}
	return P2PEndpoint(id), nil
}
