// Package servertest is the in-memory twin of the data plane (STYLE.md
// pattern 4; hashicorp/raft's InmemTransport plays the same part for raft):
// real block servers (server.Server) over a model synthesized into a
// temporary directory (Model, blocks/synth), reached through api.Pipe
// connections instead of websockets, with hooks that kill a server, stall
// it or delay its frames (in the spirit of raft's fuzzy TransportHooks); a
// graceful stop is the server's own Shutdown. A client plugs in through its
// seams, client.WithDialer(net.Dial) and client.WithInfoFetcher(net.Info).
//
// Nothing touches a socket, the shared model files or the real clock's
// patience: inside a testing/synctest bubble, emulated latencies, Delay,
// step and alloc timeouts all run on the fake clock, so a test that sits
// through a 30 s step timeout takes no real time. Create the Model outside
// the bubble (see NewModel), and the Network and its servers inside it.
//
// Only tests import it. This package must never be imported by production
// code, and never imports client/, registry/, node/, ingress/ or cmd/.
package servertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// ErrUnreachable is returned (wrapped) by Dial and Info for a server that
// is unknown or was killed: a refused connection.
var ErrUnreachable = errors.New("servertest: server unreachable")

// Network is a set of named block servers of one model, reachable through
// Dial and Info. It is safe for concurrent use.
type Network struct {
	tb       testing.TB
	model    *Model
	cacheDir string         // the servers' shared measurement cache
	serving  sync.WaitGroup // ServeConn goroutines

	mu sync.Mutex // guards the fields with the Locked suffix
	// serversLocked holds the servers by inference URL, orderLocked in
	// start order.
	serversLocked map[string]*Server
	orderLocked   []*Server
	dialsLocked   int // names the client ends in the servers' logs
}

// NewNetwork returns an empty network serving m. Cleanup kills every
// server (a connection nobody reads or a stalled server cannot hold it
// up), shuts it down, waits for the goroutines that served its
// connections and releases its weights.
func NewNetwork(tb testing.TB, m *Model) *Network {
	tb.Helper()
	n := &Network{tb: tb, model: m, cacheDir: tb.TempDir(), serversLocked: map[string]*Server{}}
	tb.Cleanup(n.close)
	return n
}

// Start starts a block server named name hosting span. Its address is
// NAME:1 (Server.Addr); configure, when not nil, adjusts its config first:
// server.DefaultConfig with the Network's model, no listener, a drain
// timeout of 0 and a measurement cache shared by the Network's servers.
// Inside a bubble the start-up measurement reads a frozen clock, so tau
// and tauI come out at their floor (the same for every server): routes
// are then decided by the emulated latencies (Config.EmulateLatency),
// which run on the fake clock.
func (n *Network) Start(name string, span swarm.Span, configure func(*server.Config)) *Server {
	n.tb.Helper()
	cfg := server.DefaultConfig()
	cfg.Model = n.model.Path
	cfg.Blocks = span
	cfg.Listen = ""
	cfg.DrainTimeout = 0
	cfg.MeasureCacheDir = n.cacheDir
	if configure != nil {
		configure(&cfg)
	}
	srv, err := server.New(context.Background(), cfg, nil)
	require.NoError(n.tb, err)
	addr := name + ":1"
	ep, err := api.ParseEndpoint(addr)
	require.NoError(n.tb, err)
	srv.AddEndpoints(ep.Inference)
	s := &Server{Server: srv, Addr: addr, URL: ep.Inference, connsLocked: map[*conn]struct{}{}}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, dup := n.serversLocked[s.URL]
	require.Falsef(n.tb, dup, "servertest: a server named %q is already started", name)
	n.serversLocked[s.URL] = s
	n.orderLocked = append(n.orderLocked, s)
	return s
}

// Addrs returns the addresses of the servers in start order, the list
// client.New takes.
func (n *Network) Addrs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, len(n.orderLocked))
	for i, s := range n.orderLocked {
		out[i] = s.Addr
	}
	return out
}

// Dial connects to the server at ep.Inference over an api.Pipe whose
// server end the server serves (ServeConn); it is a client.Dialer. Errors
// wrap ErrUnreachable (unknown or killed server) or ctx's error.
func (n *Network) Dial(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
	s, err := n.lookup(ep)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("servertest: dial %s: %w", ep.Inference, err)
	}
	n.mu.Lock()
	n.dialsLocked++
	client := fmt.Sprintf("client#%d", n.dialsLocked)
	n.mu.Unlock()
	clientEnd, serverEnd := api.Pipe(maxPayload, client, s.URL)
	c := &conn{FrameConn: serverEnd, s: s, closed: make(chan struct{})}
	if !s.track(c) {
		clientEnd.Close()
		serverEnd.Close()
		return nil, fmt.Errorf("%w: dial %s: connection refused (killed)", ErrUnreachable, s.URL)
	}
	n.serving.Go(func() { s.ServeConn(c) })
	return clientEnd, nil
}

// Info reads the server's Info document as the /swarm/info/1 stream
// carries it (Server.WriteInfo, after the emulated latency, then
// api.ReadInfo); it is a client.InfoFetcher. A stalled server answers once
// resumed, a delayed one after its delay, unless ctx ends first. Errors
// wrap ErrUnreachable (unknown or killed server) or ctx's error.
func (n *Network) Info(ctx context.Context, ep api.Endpoint) (api.Info, error) {
	s, err := n.lookup(ep)
	if err != nil {
		return api.Info{}, err
	}
	if s.killed() {
		return api.Info{}, fmt.Errorf("%w: info of %s: connection refused (killed)", ErrUnreachable, s.URL)
	}
	if !s.hold(ctx.Done()) {
		return api.Info{}, fmt.Errorf("servertest: info of %s: %w", s.URL, ctx.Err())
	}
	var buf bytes.Buffer
	if err := s.WriteInfo(ctx, &buf); err != nil {
		return api.Info{}, err
	}
	return api.ReadInfo(&buf)
}

// lookup finds the server of ep.Inference.
func (n *Network) lookup(ep api.Endpoint) (*Server, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.serversLocked[ep.Inference]
	if s == nil {
		return nil, fmt.Errorf("%w: no server at %s", ErrUnreachable, ep.Inference)
	}
	return s, nil
}

// close kills and shuts down every server, waits for the connections they
// served and releases the weights.
func (n *Network) close() {
	n.mu.Lock()
	servers := append([]*Server(nil), n.orderLocked...)
	n.mu.Unlock()
	for _, s := range servers {
		s.Kill()
		s.Shutdown(context.Background())
	}
	n.serving.Wait()
	for _, s := range servers {
		s.Close()
	}
}

// Server is one block server of a Network: the real server.Server (its
// Info, Shutdown and the rest work as usual; Shutdown is the graceful
// stop) with the network's hooks on its connections.
type Server struct {
	*server.Server
	// Addr is NAME:1, what client.New takes.
	Addr string
	// URL is its inference URL, ws://NAME:1/v1/inference: how a client's
	// Session.Chain and Stats name it.
	URL string

	mu sync.Mutex // guards the fields with the Locked suffix
	// connsLocked are the server ends of its open connections.
	connsLocked  map[*conn]struct{}
	killedLocked bool
	// stallLocked, when not nil, holds every frame and info answer until
	// Resume closes it.
	stallLocked chan struct{}
	delayLocked time.Duration
}

// Kill imitates a crash: every connection closes at once, without a frame,
// and later dials and info reads fail with ErrUnreachable.
func (s *Server) Kill() {
	s.mu.Lock()
	s.killedLocked = true
	conns := slices.Collect(maps.Keys(s.connsLocked))
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Stall makes the server hang as seen from outside: it keeps reading and
// computing, but the frames it writes and its info answers are held until
// Resume or until their connection closes (a client's step timeout fires
// on the fake clock). It is idempotent.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stallLocked == nil {
		s.stallLocked = make(chan struct{})
	}
}

// Resume delivers what Stall held and lets later frames through.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stallLocked != nil {
		close(s.stallLocked)
		s.stallLocked = nil
	}
}

// Delay holds each frame the server writes, and each info answer, for d
// more (on top of its emulated latency); 0 removes the delay.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delayLocked = d
}

// hold waits out the stall and the delay; it returns false when done
// closes first.
func (s *Server) hold(done <-chan struct{}) bool {
	s.mu.Lock()
	stall, delay := s.stallLocked, s.delayLocked
	s.mu.Unlock()
	if stall != nil {
		select {
		case <-stall:
		case <-done:
			return false
		}
	}
	if delay <= 0 {
		return true
	}
	select {
	case <-time.After(delay): // collected once unreferenced (Go 1.23+)
		return true
	case <-done:
		return false
	}
}

func (s *Server) killed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killedLocked
}

// track registers an open connection; it refuses one to a killed server.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killedLocked {
		return false
	}
	s.connsLocked[c] = struct{}{}
	return true
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.connsLocked, c)
}

// conn is the server's end of one connection: its writes pass the
// Server's hooks.
type conn struct {
	api.FrameConn
	s      *Server
	closed chan struct{} // closed by Close: releases held writes
	once   sync.Once
}

// WriteFrame implements api.FrameConn after the stall and the delay.
func (c *conn) WriteFrame(f wire.Frame) error {
	if !c.s.hold(c.closed) {
		return fmt.Errorf("%w: held %s frame", api.ErrClosed, f.Type())
	}
	return c.FrameConn.WriteFrame(f)
}

// Close implements api.FrameConn.
func (c *conn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.s.forget(c)
	})
	return c.FrameConn.Close()
}
