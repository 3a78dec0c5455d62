package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
)

// The info challenge: a client that found a server's websocket in a
// registry entry asks GET /v1/info?challenge=NONCE, and the server answers
// the Info document with its node id in InfoPeerHeader and, in
// InfoSignatureHeader, its node key's signature of
// InfoChallengeMessage(NONCE, body). The client checks the signature with
// the public key of that node id and that the node's own registry entry
// advertises the websocket: an entry pointing at an endpoint its key does
// not control never enters routing (issue 19, Sybil resistance). Over
// libp2p (/swarm/info/1) the transport already authenticates the peer.
const (
	// InfoChallengeParam is the query parameter carrying the client's
	// nonce, base64url without padding, InfoNonceMin..InfoNonceMax bytes.
	InfoChallengeParam = "challenge"
	// InfoPeerHeader carries the answering node's id (a libp2p peer id).
	InfoPeerHeader = "Swarm-Peer-Id"
	// InfoSignatureHeader carries the signature, base64url without padding.
	InfoSignatureHeader = "Swarm-Info-Signature"
	// InfoNonceMin and InfoNonceMax bound the nonce, bytes.
	InfoNonceMin, InfoNonceMax = 16, 64
)

// infoChallengeDomain separates these signatures from any other use of a
// node's key (registry entries sign other bytes).
const infoChallengeDomain = "swarm/info-challenge/1\n"

// InfoChallengeMessage is the bytes a server signs for nonce and the exact
// Info document body it sends: the domain string, the nonce, then the
// SHA-256 of the body.
func InfoChallengeMessage(nonce, body []byte) []byte {
	sum := sha256.Sum256(body)
	msg := make([]byte, 0, len(infoChallengeDomain)+len(nonce)+len(sum))
	msg = append(msg, infoChallengeDomain...)
	msg = append(msg, nonce...)
	return append(msg, sum[:]...)
}

// ParseInfoNonce decodes a challenge parameter; errors wrap ErrBadInfo.
func ParseInfoNonce(s string) ([]byte, error) {
	n, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(n) < InfoNonceMin || len(n) > InfoNonceMax {
		return nil, fmt.Errorf("%w: %s must be %d to %d bytes, base64url without padding", ErrBadInfo, InfoChallengeParam, InfoNonceMin, InfoNonceMax)
	}
	return n, nil
}

// SignedInfo is an Info document read with a challenge: the document, the
// exact body it was decoded from, and what the server put in the headers.
type SignedInfo struct {
	Info      Info
	Body      []byte
	Peer      string
	Signature []byte // nil when the server sent none
}

// FetchInfoChallenge reads the Info document at infoURL like FetchInfo,
// asking the server to sign nonce. A missing or undecodable signature is
// not an error here (Signature stays nil); the caller verifies it.
func FetchInfoChallenge(ctx context.Context, hc *http.Client, infoURL string, nonce []byte) (SignedInfo, error) {
	u, err := url.Parse(infoURL)
	if err != nil {
		return SignedInfo{}, fmt.Errorf("api: GET %s: %w", infoURL, err)
	}
	q := u.Query()
	q.Set(InfoChallengeParam, base64.RawURLEncoding.EncodeToString(nonce))
	u.RawQuery = q.Encode()
	info, body, h, err := getInfo(ctx, hc, infoURL, u.String())
	if err != nil {
		return SignedInfo{}, err
	}
	si := SignedInfo{Info: info, Body: body, Peer: h.Get(InfoPeerHeader)}
	if sig, err := base64.RawURLEncoding.DecodeString(h.Get(InfoSignatureHeader)); err == nil && len(sig) > 0 {
		si.Signature = sig
	}
	return si, nil
}
