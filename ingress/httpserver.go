package ingress

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// HTTPConfig bounds what one client may hold of the ingress's HTTP server
// (`swarm proxy --read-timeout --idle-timeout --max-connections`), so that
// slow or idle connections cannot exhaust its file descriptors.
type HTTPConfig struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included: a client
	// that sends its body slower is disconnected. Streamed responses are
	// not bounded by it.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long between
	// requests.
	IdleTimeout time.Duration
	// MaxConnections is the most connections served at once; further ones
	// wait in the listen backlog until one closes.
	MaxConnections int
}

// DefaultHTTPConfig returns the defaults: headers within 10 s, a request
// within 30 s, keep-alive connections closed after 120 s idle, 1024
// connections at once.
func DefaultHTTPConfig() HTTPConfig {
	return HTTPConfig{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxConnections: 1024}
}

// Validate checks that every bound is positive; errors wrap ErrBadOption.
func (c HTTPConfig) Validate() error {
	switch {
	case c.ReadHeaderTimeout <= 0 || c.ReadTimeout <= 0 || c.IdleTimeout <= 0:
		return fmt.Errorf("%w: read-header timeout %v, read timeout %v, idle timeout %v: want all > 0", ErrBadOption, c.ReadHeaderTimeout, c.ReadTimeout, c.IdleTimeout)
	case c.MaxConnections < 1:
		return fmt.Errorf("%w: max connections %d, want >= 1", ErrBadOption, c.MaxConnections)
	}
	return nil
}

// NewHTTPServer returns the server of h with c's timeouts, and ln limited
// to c.MaxConnections connections at once (serve the returned listener).
// errorLog receives the server's own errors (nil: the standard logger).
func NewHTTPServer(h http.Handler, ln net.Listener, c HTTPConfig, errorLog *log.Logger) (*http.Server, net.Listener) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout,
		IdleTimeout: c.IdleTimeout, ErrorLog: errorLog}
	return hs, netutil.LimitListener(ln, c.MaxConnections)
}

// Serve serves ln with hs until ctx ends, then shuts hs down: requests in
// flight get up to grace to finish, after which their connections are
// closed. It returns nil after a shutdown, or the error that stopped
// serving before ctx ended.
func Serve(ctx context.Context, hs *http.Server, ln net.Listener, grace time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("ingress: serving HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-done
	return nil
}
