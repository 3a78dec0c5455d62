package server

import (
	"encoding/base64"
	"net/http"

	"github.com/swarmllm/swarm/api"
)

// InfoSigner signs info challenges with a node's key (api.InfoChallengeMessage).
type InfoSigner struct {
	// Peer is the node id whose key signs (a libp2p peer id).
	Peer string
	// Sign returns the signature of msg.
	Sign func(msg []byte) ([]byte, error)
}

// SetInfoSigner makes GET /v1/info?challenge=NONCE answer with the node id
// and its signature of the nonce and the body (see api.InfoChallengeParam).
// A server joined to a registry sets its node's key, so that clients can
// check that the websocket an entry advertises is the entry's. It may be
// called at any time.
func (s *Server) SetInfoSigner(sg InfoSigner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signerLocked = &sg
}

// signInfo sets the challenge headers for body, or answers 400 (a bad
// nonce) or 500 (a failed signature) and reports false. Without a signer it
// sets nothing: the client then finds no signature.
func (s *Server) signInfo(w http.ResponseWriter, challenge string, body []byte) bool {
	s.mu.Lock()
	sg := s.signerLocked
	s.mu.Unlock()
	if sg == nil {
		return true
	}
	nonce, err := api.ParseInfoNonce(challenge)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	sig, err := sg.Sign(api.InfoChallengeMessage(nonce, body))
	if err != nil {
		s.log.Error("signing an info challenge failed", "err", err)
		http.Error(w, "cannot sign the challenge", http.StatusInternalServerError)
		return false
	}
	w.Header().Set(api.InfoPeerHeader, sg.Peer)
	w.Header().Set(api.InfoSignatureHeader, base64.RawURLEncoding.EncodeToString(sig))
	return true
}
