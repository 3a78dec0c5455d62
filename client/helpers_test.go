package client_test

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// stories returns the path of a stories260K file in the shared models.
func stories(t testing.TB, name string) string {
	t.Helper()
	return testenv.SharedFile(t, "models", "stories260K", name)
}

// referenceText is section 2 of stories260K's REFERENCE.md: llama2.c's
// expectation for 200 greedy tokens from an empty prompt.
func referenceText(t testing.TB) string {
	t.Helper()
	raw, err := os.ReadFile(stories(t, "REFERENCE.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)i\\.e\\. this text \\(200 generated tokens.*?```\n(.*?)\n```").FindSubmatch(raw)
	require.Len(t, m, 2, "section 2 text not found in REFERENCE.md")
	return string(m[1])
}

// loadHead loads the client side of a model (no block weights).
func loadHead(t testing.TB, model string) blocks.Head {
	t.Helper()
	m, err := blocks.Open(model, blocks.WithTokenizer(stories(t, "tok512.bin")))
	require.NoError(t, err)
	defer m.Close()
	h, err := m.LoadHead()
	require.NoError(t, err)
	return h
}

// testServer is an in-process server on a real loopback listener.
type testServer struct {
	srv *server.Server
	hs  *httptest.Server
	ln  *trackingListener
	url string // ws://127.0.0.1:PORT/v1/inference
}

// startServer runs a server for span of model behind an httptest server;
// configure adjusts its Config. Cleanup shuts it down.
func startServer(t testing.TB, model string, span swarm.Span, configure func(*server.Config)) *testServer {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Model = model
	cfg.Blocks = span
	cfg.MeasureCacheDir = t.TempDir()
	cfg.DrainTimeout = 0
	if configure != nil {
		configure(&cfg)
	}
	srv, err := server.New(context.Background(), cfg, nil)
	require.NoError(t, err)
	hs := httptest.NewUnstartedServer(srv.Handler())
	ln := &trackingListener{Listener: hs.Listener}
	hs.Listener = ln
	hs.Start()
	ts := &testServer{srv: srv, hs: hs, ln: ln, url: "ws" + hs.URL[len("http"):] + "/v1/inference"}
	t.Cleanup(ts.stop)
	return ts
}

// kill imitates a crash: the listener and every TCP connection close at
// once, without any frame.
func (ts *testServer) kill() { ts.ln.kill() }

// trackingListener remembers the connections it accepted so that kill can
// close them all.
type trackingListener struct {
	net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed {
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns = append(l.conns, c)
	return c, nil
}

func (l *trackingListener) kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed = true
	l.Listener.Close()
	for _, c := range l.conns {
		c.Close()
	}
}

// stop shuts the server down (telling open sessions at once) and closes it.
func (ts *testServer) stop() {
	ts.srv.Shutdown(context.Background())
	ts.hs.Close()
	ts.srv.Close()
}
