package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
)

// front is what a running server's websocket listener and libp2p stream
// handlers (ServeStreams) serve: the current span server. A live span
// move switches it to the new server; connections and streams accepted
// before the switch stay with the server that accepted them, so sessions
// open on the old span go on there while new ones reach the new span, on
// the same peer id (and a websocket URL that clients still hold reaches the
// new span too). It is safe for concurrent use.
type front struct {
	cur atomic.Pointer[frontTarget]
	// pages, when not nil, serves the node's own pages (dashboard, state,
	// metrics); set before the front serves.
	pages *pages
}

// frontTarget is one span server and its HTTP handler.
type frontTarget struct {
	srv *server.Server
	h   http.Handler
}

var _ StreamServer = (*front)(nil)

// newFront returns a front without a server yet: until set, HTTP
// requests get 503 and streams are closed.
func newFront() *front { return &front{} }

// set makes srv the server new connections and streams reach.
func (f *front) set(srv *server.Server) { f.cur.Store(&frontTarget{srv: srv, h: srv.Handler()}) }

// ServeHTTP serves GET /v1/info and /v1/inference of the current server.
// With pages, it serves the dashboard, /api/v1/state and /metrics too.
func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.pages != nil && f.pages.owns(r.URL.Path) {
		f.pages.mux.ServeHTTP(w, r)
		return
	}
	t := f.cur.Load()
	if t == nil {
		http.Error(w, errLoading.Error(), http.StatusServiceUnavailable)
		return
	}
	t.h.ServeHTTP(w, r)
}

// ServeConn serves one /swarm/inference/1 stream on the current server.
func (f *front) ServeConn(fc api.FrameConn) {
	t := f.cur.Load()
	if t == nil {
		fc.Close()
		return
	}
	t.srv.ServeConn(fc)
}

// WriteInfo answers /swarm/info/1 with the current server's Info.
func (f *front) WriteInfo(ctx context.Context, w io.Writer) error {
	t := f.cur.Load()
	if t == nil {
		return errLoading
	}
	return t.srv.WriteInfo(ctx, w)
}

// errLoading answers requests that arrive before the span is loaded.
var errLoading = errors.New("node: the server is loading its span")
