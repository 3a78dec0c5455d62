package node

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// publishServing announces srv in reg as SERVING at the given endpoints.
func publishServing(t *testing.T, m *member, srv *server.Server, endpoints ...string) {
	t.Helper()
	// As RunServer does: the server answers info challenges with the key
	// of the entry advertising its websocket.
	srv.SetInfoSigner(server.InfoSigner{Peer: m.node.ID().String(), Sign: m.node.PrivateKey().Sign})
	info := srv.Info().ServerInfo
	info.ID, info.Endpoints = "", endpoints
	require.NoError(t, m.reg.Publish(info, swarm.StateServing))
}

// joinClient starts a client-only member bootstrapping from boot.
func joinClient(t *testing.T, boot *member) *Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	cn, err := JoinClient(ctx, registrytest.P2PConfig(boot.node), registrytest.LoopbackConfig(), p2pOptions()...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cn.Close()) })
	return cn
}

// generate runs a greedy generation of n tokens from BOS through a session
// of c and returns the text; during runs after the first token with the
// session open.
func generate(t *testing.T, ctx context.Context, c *client.Client, n int, during func(*client.Session)) string {
	t.Helper()
	sess, err := c.Open(ctx, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, sess.Close()) }()
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{Temperature: 0})
	require.NoError(t, err)
	var text strings.Builder
	for tok, err := range sess.Generate(ctx, []int{1}, n, sampler) {
		require.NoError(t, err)
		text.WriteString(tok.Text)
		if tok.Index == 0 && during != nil {
			during(sess)
		}
	}
	return text.String()
}

// TestClient_RegistryCandidates generates llama2.c's reference story
// through three servers found in the registry: one reached over its
// websocket, one that advertises only its libp2p addresses (served over
// /swarm/inference/1), and one whose advertised websocket refuses
// connections, so that the client falls back to its libp2p streams.
func TestClient_RegistryCandidates(t *testing.T) {
	cache := t.TempDir()
	boot := joinMember(t, registrytest.P2PConfig(nil))
	a := joinMember(t, registrytest.P2PConfig(boot.node))
	b := joinMember(t, registrytest.P2PConfig(boot.node))
	c := joinMember(t, registrytest.P2PConfig(boot.node))

	srvA := startServer(t, span(0, 2), cache)
	urlA := serveWebsocket(t, srvA)
	srvB := startServer(t, span(2, 4), cache)
	srvC := startServer(t, span(4, 5), cache)
	for _, s := range []struct {
		m   *member
		srv *server.Server
	}{{a, srvA}, {b, srvB}, {c, srvC}} {
		t.Cleanup(ServeStreams(s.m.node.Host(), s.srv, 0))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "ws://" + ln.Addr().String() + api.InferencePath
	require.NoError(t, ln.Close())
	publishServing(t, a, srvA, append([]string{urlA}, a.addrs()...)...)
	publishServing(t, b, srvB, b.addrs()...)
	publishServing(t, c, srvC, append([]string{refused}, c.addrs()...)...)

	cn := joinClient(t, boot)
	head := loadHead(t)
	cands, err := NewCandidates(cn.Registry, head.Info())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	require.NoError(t, cands.WaitCovered(ctx))
	cl, err := client.New(head, nil, cands.ClientOptions(cn.Node.Host())...)
	require.NoError(t, err)

	var chain []client.HopStats
	text := generate(t, ctx, cl, 200, func(s *client.Session) { chain = s.Chain() })
	require.Equal(t, referenceText(t), text)
	require.Len(t, chain, 3)
	require.Equal(t, urlA, chain[0].Server)
	require.Equal(t, api.P2PEndpoint(b.reg.ID()).Inference, chain[1].Server)
	require.Equal(t, refused, chain[2].Server, "named by its advertised websocket, reached over libp2p")
	for i, s := range []swarm.Span{span(0, 2), span(2, 4), span(4, 5)} {
		require.Equal(t, s, chain[i].Span)
	}
	// From now on the candidates name c by its libp2p endpoint.
	eps, err := cands.Endpoints(ctx)
	require.NoError(t, err)
	require.Contains(t, eps, api.P2PEndpoint(c.reg.ID()))
}

// TestClient_ThroughCircuitRelay serves a whole-model session from a node
// that cannot be dialled (no listen address, behind a "NAT"): it holds a
// reservation on a relay, advertises its circuit address in the registry,
// and the client's /swarm/inference/1 stream runs over the relayed
// (limited) connection. The 200 tokens of llama2.c's reference story are
// about 70 KB of frames each way for stories260K (d_model 64), within the
// relay's default limit of 128 KiB (--relay-max-bytes); with a 16 KiB limit
// the relay resets the connection mid-session and, the hidden server being
// the only one, the session fails (after a failover wait of 1 s for
// another server). (libp2p advertises circuit addresses
// only for relays with public addresses, so on loopback the test forms it.)
func TestClient_ThroughCircuitRelay(t *testing.T) {
	for _, tt := range []struct {
		name     string
		maxBytes int64
		fits     bool
	}{
		{"default limit", p2p.DefaultRelayMaxBytes, true},
		{"16 KiB limit", 16 << 10, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			relayCfg := registrytest.P2PConfig(nil)
			relayCfg.RelayService, relayCfg.RelayMaxBytes = true, tt.maxBytes
			relay := joinMember(t, relayCfg)
			hidden := joinMember(t, registrytest.P2PConfig(relay.node), p2p.WithLibp2pOptions(libp2p.ForceReachabilityPrivate(), libp2p.NoListenAddrs))
			require.Empty(t, hidden.node.Host().Addrs(), "the hidden node listens nowhere")
			srv := startServer(t, span(0, 5), t.TempDir())
			t.Cleanup(ServeStreams(hidden.node.Host(), srv, 0))
			circuit := relay.addrs()[0] + "/p2p-circuit/p2p/" + hidden.reg.ID()
			publishServing(t, hidden, srv, circuit)

			cn := joinClient(t, relay)
			head := loadHead(t)
			cands, err := NewCandidates(cn.Registry, head.Info())
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
			defer cancel()
			require.NoError(t, cands.WaitCovered(ctx))
			cl, err := client.New(head, nil, append(cands.ClientOptions(cn.Node.Host()), client.WithInfoTimeout(2*time.Second), client.WithFailoverWait(time.Second))...)
			require.NoError(t, err)

			// The hidden node's relay finder runs every 2 s: until it holds
			// a reservation, the relay refuses the circuit and Open finds no
			// chain.
			var sess *client.Session
			for sess == nil {
				sess, err = cl.Open(ctx, 200)
				if err != nil {
					require.ErrorIs(t, err, client.ErrNoChain)
					require.NoError(t, sleep(ctx, 200*time.Millisecond), "never reached the hidden server: %v", err)
				}
			}
			defer sess.Close()
			limited := false
			for _, conn := range hidden.node.Host().Network().ConnsToPeer(cn.Node.ID()) {
				for _, s := range conn.GetStreams() {
					if string(s.Protocol()) == api.InferenceProtocol {
						limited = conn.Stat().Limited
					}
				}
			}
			require.True(t, limited, "the inference stream runs over the relayed connection")
			sampler, err := blocks.NewSampler(blocks.SamplerConfig{Temperature: 0})
			require.NoError(t, err)
			var text strings.Builder
			var genErr error
			for tok, err := range sess.Generate(ctx, []int{1}, 200, sampler) {
				if err != nil {
					genErr = err
					break
				}
				text.WriteString(tok.Text)
			}
			if !tt.fits {
				require.ErrorIs(t, genErr, client.ErrFailover, "the relay reset the connection")
				require.True(t, strings.HasPrefix(referenceText(t), text.String()))
				require.Less(t, text.Len(), len(referenceText(t)))
				return
			}
			require.NoError(t, genErr)
			require.Equal(t, referenceText(t), text.String())
			st := sess.Stats()
			require.Empty(t, st.Replaced, "no failover: the relay carried the whole session")
			require.Equal(t, api.P2PEndpoint(hidden.reg.ID()).Inference, st.Hops[0].Server)
			t.Logf("200 tokens through the relay: TTFT %v, TPOT %v, RTT t_cj median %v", st.TTFT, st.TPOT, st.Hops[0].RTT)
		})
	}
}

// TestClient_FailoverToRegistryServer kills a hop mid-session: the client
// asks the registry again and replaces it by a server that was published
// only after the session opened, never by one announced DOWN; the story is
// still llama2.c's reference text.
func TestClient_FailoverToRegistryServer(t *testing.T) {
	cache := t.TempDir()
	boot := joinMember(t, registrytest.P2PConfig(nil))
	a, b, c, d := joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node)),
		joinMember(t, registrytest.P2PConfig(boot.node)), joinMember(t, registrytest.P2PConfig(boot.node))
	srvA := startServer(t, span(0, 3), cache)
	publishServing(t, a, srvA, serveWebsocket(t, srvA))
	srvB := startServer(t, span(3, 5), cache)
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	killB, cancelB := context.WithCancel(context.Background())
	servedB := make(chan error, 1)
	go func() { servedB <- srvB.Serve(killB, lnB) }()
	// stopB shuts B down and returns once its sessions were told to fail
	// over and its connections closed.
	stopB := sync.OnceValue(func() error {
		cancelB()
		return <-servedB
	})
	defer func() { require.NoError(t, stopB()) }()
	urlB := "ws://" + lnB.Addr().String() + api.InferencePath
	publishServing(t, b, srvB, urlB)
	srvC := startServer(t, span(3, 5), cache)
	urlC := serveWebsocket(t, srvC)
	srvD := startServer(t, span(3, 5), cache)
	urlD := serveWebsocket(t, srvD)
	infoD := srvD.Info().ServerInfo
	infoD.ID, infoD.Endpoints = "", []string{urlD}
	require.NoError(t, d.reg.Publish(infoD, swarm.StateDown))

	cn := joinClient(t, boot)
	head := loadHead(t)
	cands, err := NewCandidates(cn.Registry, head.Info())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	require.NoError(t, cands.WaitCovered(ctx))
	cl, err := client.New(head, nil, cands.ClientOptions(cn.Node.Host())...)
	require.NoError(t, err)

	sess, err := cl.Open(ctx, 200)
	require.NoError(t, err)
	defer func() { require.NoError(t, sess.Close()) }()
	require.Equal(t, urlB, sess.Chain()[1].Server)
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{Temperature: 0})
	require.NoError(t, err)
	var text strings.Builder
	for tok, err := range sess.Generate(ctx, []int{1}, 200, sampler) {
		require.NoError(t, err)
		text.WriteString(tok.Text)
		if tok.Index == 20 {
			// C joins the registry, then B's server goes away (its
			// sessions are told to fail over at once).
			w := cn.Registry.Watch(ctx) // before the publication: no event missed
			publishServing(t, c, srvC, urlC)
			for ev := range w {
				if ev.Entry.NodeID == c.reg.ID() && ev.Entry.Routable() {
					break
				}
			}
			require.NoError(t, stopB())
		}
	}
	require.Equal(t, referenceText(t), text.String())
	st := sess.Stats()
	require.Len(t, st.Replaced, 1)
	require.Equal(t, urlB, st.Replaced[0].Server)
	require.Equal(t, urlC, st.Hops[1].Server, "the replacement came from the registry")
	require.Equal(t, span(3, 5), st.Hops[1].Span)
	for _, h := range st.Hops {
		require.NotEqual(t, urlD, h.Server, "a DOWN server is never a candidate")
	}
}
