package server_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// stories returns the path of stories260K.bin in the shared models.
func stories(t testing.TB) string {
	t.Helper()
	return testenv.SharedFile(t, "models", "stories260K", "stories260K.bin")
}

// modelInfo reads the shared model's description.
func modelInfo(t testing.TB) swarm.ModelInfo {
	t.Helper()
	m, err := blocks.Open(stories(t))
	require.NoError(t, err)
	defer m.Close()
	return m.Info()
}

// newServer builds a server for span of stories260K; configure adjusts the
// config first.
func newServer(t testing.TB, span swarm.Span, configure func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Model = stories(t)
	cfg.Blocks = span
	cfg.MeasureCacheDir = t.TempDir()
	cfg.DrainTimeout = 0
	if configure != nil {
		configure(&cfg)
	}
	srv, err := server.New(context.Background(), cfg, nil)
	require.NoError(t, err)
	return srv
}

// served is a server behind an httptest server on real loopback TCP.
type served struct {
	srv *server.Server
	hs  *httptest.Server
}

// serve starts srv's Handler; cleanup shuts it down.
func serve(t testing.TB, srv *server.Server) *served {
	t.Helper()
	s := &served{srv: srv, hs: httptest.NewServer(srv.Handler())}
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		s.hs.Close()
		srv.Close()
	})
	return s
}

// wsURL is the server's inference URL.
func (s *served) wsURL() string {
	return "ws" + strings.TrimPrefix(s.hs.URL, "http") + api.InferencePath
}

// peer is a client end of a frame connection with a reader goroutine.
type peer struct {
	t      testing.TB
	fc     api.FrameConn
	frames chan wire.Frame
	err    chan error // the reader's final error
}

// dial opens a websocket to s.
func (s *served) dial(t testing.TB) *peer {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(s.wsURL(), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return newPeer(t, api.NewWebsocket(ws, 0))
}

func newPeer(t testing.TB, fc api.FrameConn) *peer {
	p := &peer{t: t, fc: fc, frames: make(chan wire.Frame, 64), err: make(chan error, 1)}
	go func() {
		for {
			f, err := fc.ReadFrame()
			if err != nil {
				p.err <- err
				close(p.frames)
				return
			}
			p.frames <- f
		}
	}()
	t.Cleanup(func() { fc.Close() })
	return p
}

// send writes a frame.
func (p *peer) send(f wire.Frame) {
	p.t.Helper()
	require.NoError(p.t, p.fc.WriteFrame(f))
}

// next returns the next frame; it fails the test if none comes within a
// generous bound (a hung server, not a timing assumption).
func (p *peer) next() wire.Frame {
	p.t.Helper()
	select {
	case f, ok := <-p.frames:
		require.True(p.t, ok, "connection closed: %v", p.peekErr())
		return f
	case <-time.After(20 * time.Second):
		p.t.Fatal("no frame from the server within 20s")
		return nil
	}
}

// closed waits for the server to close the connection and returns the
// reader's error.
func (p *peer) closed() error {
	p.t.Helper()
	for {
		select {
		case f, ok := <-p.frames:
			if !ok {
				return <-p.err
			}
			p.t.Fatalf("frame %s while waiting for the connection to close", f.Type())
		case <-time.After(20 * time.Second):
			p.t.Fatal("connection still open after 20s")
			return nil
		}
	}
}

func (p *peer) peekErr() error {
	select {
	case err := <-p.err:
		p.err <- err
		return err
	default:
		return nil
	}
}

// expect returns the next frame as a T, failing the test otherwise.
func expect[T wire.Frame](p *peer) T {
	p.t.Helper()
	f := p.next()
	v, ok := f.(T)
	require.Truef(p.t, ok, "got %T %+v, want %T", f, f, *new(T))
	return v
}

// open opens a session and returns its id.
func (p *peer) open(o wire.Open) string {
	p.t.Helper()
	p.send(&o)
	g := expect[*wire.Granted](p)
	require.Equal(p.t, o.DType, g.DType)
	return g.SessionID
}

// openMsg is an Open for stories260K with defaults filled in.
func openMsg(span swarm.Span, maxLength int) wire.Open {
	return wire.Open{Model: "stories260K", Span: span, MaxLength: maxLength, DType: swarm.DTypeF32, AllocTimeout: 60}
}

// hidden makes deterministic hidden states [n, 64].
func hidden(n, seed int) []float32 {
	x := make([]float32, n*64)
	for i := range x {
		x[i] = float32((i*7+seed*13)%23-11) / 8
	}
	return x
}
