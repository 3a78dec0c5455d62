package node

import (
	"context"
	"net"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// Integration tests with real libp2p hosts on loopback, real servers over
// stories260K and a real client; waits are bounded by p2pTimeout.

const p2pTimeout = 60 * time.Second

// p2pOptions retry the bootstrap peers quickly.
func p2pOptions() []p2p.Option {
	return append(registrytest.P2POptions(), p2p.WithDialTimeout(5*time.Second))
}

// member is a node and its registry replica, closed at the end of the test.
type member struct {
	node *p2p.Node
	reg  *registry.Registry
}

func joinMember(t testing.TB, cfg p2p.Config, opts ...p2p.Option) *member {
	t.Helper()
	return joinMemberWith(t, cfg, registrytest.LoopbackConfig(), opts...)
}

// joinMemberWith is joinMember with the registry configuration rc.
func joinMemberWith(t testing.TB, cfg p2p.Config, rc registry.Config, opts ...p2p.Option) *member {
	t.Helper()
	n, err := p2p.New(cfg, append(p2pOptions(), opts...)...)
	require.NoError(t, err)
	reg, err := registry.Join(n, rc)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, reg.Close())
		require.NoError(t, n.Close())
	})
	if len(cfg.Bootstrap) > 0 {
		ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
		defer cancel()
		require.NoError(t, SyncRegistry(ctx, n, reg))
	}
	return &member{node: n, reg: reg}
}

// addrs returns the node's multiaddrs as strings.
func (m *member) addrs() []string {
	var out []string
	for _, a := range m.node.Addrs() {
		out = append(out, a.String())
	}
	return out
}

// storiesPath returns stories260K's checkpoint and tokenizer.
func storiesPath(t testing.TB) (model, tokenizer string) {
	t.Helper()
	dir := testenv.SharedFile(t, "models", "stories260K")
	return dir + "/stories260K.bin", dir + "/tok512.bin"
}

// startServer loads a span of stories260K (no websocket yet) and closes it
// at the end of the test. On shutdown it tells open sessions to fail over
// at once (no drain).
func startServer(t testing.TB, s swarm.Span, cacheDir string) *server.Server {
	t.Helper()
	model, _ := storiesPath(t)
	cfg := server.DefaultConfig()
	cfg.Model, cfg.Blocks, cfg.Listen, cfg.MeasureCacheDir, cfg.DrainTimeout = model, s, "", cacheDir, 0
	srv, err := server.New(t.Context(), cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv
}

// serveWebsocket serves srv's websocket on a loopback port until the test
// ends and returns its URL.
func serveWebsocket(t testing.TB, srv *server.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "ws://" + ln.Addr().String() + api.InferencePath
}

// loadHead loads stories260K's head (embeddings, LM head, tokenizer).
func loadHead(t testing.TB) blocks.Head {
	t.Helper()
	model, tok := storiesPath(t)
	m, err := blocks.Open(model, blocks.WithTokenizer(tok))
	require.NoError(t, err)
	defer m.Close()
	head, err := m.LoadHead()
	require.NoError(t, err)
	return head
}

// referenceText is section 2 of stories260K's REFERENCE.md (llama2.c's
// 200 greedy tokens from an empty prompt).
func referenceText(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", "REFERENCE.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)i\\.e\\. this text \\(200 generated tokens.*?```\n(.*?)\n```").FindSubmatch(raw)
	require.Len(t, m, 2, "section 2 text not found in REFERENCE.md")
	return string(m[1])
}
