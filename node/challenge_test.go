package node

import (
	"context"
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// TestInfoChallenge: over real libp2p registries and real servers on
// loopback websockets, a client accepts a websocket's info only when the
// server signs the challenge with the key of a node whose registry entry
// advertises that websocket. Refused: a server that signs nothing, one
// signing with a key no entry of that websocket belongs to, one whose
// signature is of other bytes. Accepted: the entry's own server, which
// then is the websocket's node.
func TestInfoChallenge(t *testing.T) {
	cache := t.TempDir()
	boot := joinMember(t, registrytest.P2PConfig(nil))
	owner, squatter, stranger, forger := joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node)),
		joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node))

	// Each server is published by one member advertising its websocket.
	serve := func(m *member, sign *server.InfoSigner) string {
		srv := startServer(t, span(0, 5), cache)
		if sign != nil {
			srv.SetInfoSigner(*sign)
		}
		url := serveWebsocket(t, srv)
		info := srv.Info().ServerInfo
		info.ID, info.Endpoints = "", append([]string{url}, m.addrs()...)
		require.NoError(t, m.reg.Publish(info, swarm.StateServing))
		return url
	}
	keyOf := func(m *member) server.InfoSigner {
		return server.InfoSigner{Peer: m.node.ID().String(), Sign: m.node.PrivateKey().Sign}
	}
	ownURL := serve(owner, &[]server.InfoSigner{keyOf(owner)}[0])
	unsignedURL := serve(squatter, nil)
	outsider, _, err := crypto.GenerateEd25519Key(rand.Reader)
	require.NoError(t, err)
	outsiderID, err := peer.IDFromPrivateKey(outsider)
	require.NoError(t, err)
	strangerURL := serve(stranger, &server.InfoSigner{Peer: outsiderID.String(), Sign: outsider.Sign})
	forged := keyOf(forger)
	forgedURL := serve(forger, &server.InfoSigner{Peer: forged.Peer, Sign: func(msg []byte) ([]byte, error) {
		return forged.Sign(append(msg, 'x'))
	}})

	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	var snap []registry.Entry
	for len(snap) < 4 {
		if snap = boot.reg.Snapshot(); len(snap) < 4 {
			select {
			case <-boot.reg.Changed():
			case <-ctx.Done():
				t.Fatalf("registry has %d entries, want 4", len(snap))
			}
		}
	}
	c, err := NewCandidates(boot.reg, *snapshotModel(t, snap))
	require.NoError(t, err)
	hc := &http.Client{}
	fetch := func(url string) (api.Info, error) {
		ep, err := api.ParseEndpoint(url)
		require.NoError(t, err)
		return c.fetchVerified(ctx, hc, ep)
	}

	info, err := fetch(ownURL)
	require.NoError(t, err)
	require.Equal(t, span(0, 5), info.Span)
	id, ok := c.peerOf(ownURL)
	require.True(t, ok)
	require.Equal(t, owner.reg.ID(), id, "the websocket's node is the one that proved it")

	// A nonce out of bounds is refused; no challenge, no signature.
	ep, err := api.ParseEndpoint(ownURL)
	require.NoError(t, err)
	resp, err := http.Get(ep.Info + "?" + api.InfoChallengeParam + "=c2hvcnQ")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, err = http.Get(ep.Info)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get(api.InfoSignatureHeader))

	for url, want := range map[string]string{
		unsignedURL: "did not sign the info challenge",
		strangerURL: "node " + outsiderID.String() + ", which answered, has no routable registry entry advertising this websocket",
		forgedURL:   "the signature does not verify with node " + forged.Peer + "'s key",
	} {
		_, err := fetch(url)
		require.ErrorIs(t, err, ErrUnverified, url)
		require.ErrorContains(t, err, want, url)
	}
}

// snapshotModel returns the model description the entries' servers carry.
func snapshotModel(t *testing.T, snap []registry.Entry) *swarm.ModelInfo {
	t.Helper()
	m := swarm.ModelInfo{Name: snap[0].Info.Model, NBlocks: snap[0].Info.ModelBlocks}
	require.NotEmpty(t, m.Name)
	require.Positive(t, m.NBlocks)
	return &m
}
