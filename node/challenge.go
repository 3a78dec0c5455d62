package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/swarmllm/swarm/api"
)

// fetchVerified reads the Info document of a websocket endpoint with a
// fresh 32-byte challenge (api.FetchInfoChallenge) and accepts it only when
// the answer is signed by the key of a node whose routable registry entry
// advertises that websocket: a self-signed entry pointing at an endpoint
// its key does not control never enters routing (issue 19). The answering
// node becomes the endpoint's node (for health and the libp2p fallback).
// Errors wrap ErrUnverified, or are the fetch's.
func (c *Candidates) fetchVerified(ctx context.Context, hc *http.Client, ep api.Endpoint) (api.Info, error) {
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return api.Info{}, fmt.Errorf("node: challenge nonce: %w", err)
	}
	si, err := api.FetchInfoChallenge(ctx, hc, ep.Info, nonce)
	if err != nil {
		return api.Info{}, err
	}
	if err := c.verifySigned(ep.Inference, nonce, si); err != nil {
		return api.Info{}, fmt.Errorf("%w: %s: %w", ErrUnverified, ep.Inference, err)
	}
	return si.Info, nil
}

// verifySigned checks si's signature of nonce against the key of the node
// it names, and that this node advertises the websocket wsURL.
func (c *Candidates) verifySigned(wsURL string, nonce []byte, si api.SignedInfo) error {
	if si.Signature == nil || si.Peer == "" {
		return fmt.Errorf("the server did not sign the info challenge (no %s / %s header)", api.InfoPeerHeader, api.InfoSignatureHeader)
	}
	pid, err := peer.Decode(si.Peer)
	if err != nil {
		return fmt.Errorf("the server names node %q: %w", si.Peer, err)
	}
	if !c.advertises(si.Peer, wsURL) {
		return fmt.Errorf("node %s, which answered, has no routable registry entry advertising this websocket", si.Peer)
	}
	pub, err := pid.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("node id %s holds no public key: %w", si.Peer, err)
	}
	ok, err := pub.Verify(api.InfoChallengeMessage(nonce, si.Body), si.Signature)
	if err != nil || !ok {
		return fmt.Errorf("the signature does not verify with node %s's key (%v)", si.Peer, err)
	}
	c.mu.Lock()
	c.peerOfLocked[wsURL] = si.Peer
	c.mu.Unlock()
	return nil
}

// advertises reports whether node id has a routable registry entry whose
// websocket is wsURL.
func (c *Candidates) advertises(id, wsURL string) bool {
	for _, e := range c.reg.Snapshot() {
		if e.NodeID != id || !e.Routable() {
			continue
		}
		if ws, ok := websocketEndpoint(e.Info.Endpoints); ok && ws.Inference == wsURL {
			return true
		}
	}
	return false
}
