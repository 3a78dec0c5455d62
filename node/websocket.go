package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// httpShutdownTimeout bounds closing a websocket listener's idle HTTP
// connections.
const httpShutdownTimeout = 5 * time.Second

// websocket serves a running server's GET /v1/info and /v1/inference on
// one listener. A server has one, and a second one while it moves its
// span make-before-break: the new span gets its own URL, so that sessions
// that fail over from the old span (after the drain timeout) can choose
// it, where a client leaves out the URL that failed.
type websocket struct {
	ln     net.Listener
	hs     *http.Server
	url    string
	served chan struct{} // closed when Serve returned
	err    error         // Serve's error, read after served
}

// listenWebsocket listens on addr (host:port, port 0 for any) and serves
// h there, advertising the URL AdvertiseURL gives for announce (moved: a
// second listener of a span move); if serving fails before stop, the
// error is sent on failed (when it has room).
func listenWebsocket(addr, announce string, moved bool, h http.Handler, log *slog.Logger, failed chan<- error) (*websocket, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("node: listen on %s: %w", addr, err)
	}
	u, err := AdvertiseURL(announce, ln.Addr().String(), moved, net.InterfaceAddrs)
	if err != nil {
		ln.Close()
		return nil, err
	}
	w := &websocket{
		ln: ln,
		hs: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 30 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		},
		url:    u,
		served: make(chan struct{}),
	}
	go func() {
		defer close(w.served)
		w.err = w.hs.Serve(ln)
		if !errors.Is(w.err, http.ErrServerClosed) {
			select {
			case failed <- fmt.Errorf("node: serve %s: %w", ln.Addr(), w.err):
			default: // a failure is already pending
			}
		}
	}()
	return w, nil
}

// stop closes the listener and idle HTTP connections (websockets already
// upgraded are their server's: Shutdown closes them) and returns the
// serving error, if serving had failed. nil does nothing.
func (w *websocket) stop() error {
	if w == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if w.hs.Shutdown(ctx) != nil {
		w.hs.Close()
	}
	<-w.served
	if errors.Is(w.err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("node: serve %s: %w", w.ln.Addr(), w.err)
}

// moveAddr is the address a second listener takes on the host of the
// first: the same host, any port.
func (w *websocket) moveAddr() string {
	host, _, err := net.SplitHostPort(w.ln.Addr().String())
	if err != nil {
		return "127.0.0.1:0" // not reached: a TCP listener's address splits
	}
	return net.JoinHostPort(host, "0")
}
