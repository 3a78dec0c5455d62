package ingress_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
)

// TestHTTPServerBoundsSlowBodies: 40 clients that send a request's headers
// and then its body never (slowloris) are each disconnected once the read
// timeout passes, at most MaxConnections of them are ever held at once,
// and a normal request is served afterwards.
func TestHTTPServerBoundsSlowBodies(t *testing.T) {
	const clients, limit = 40, 8
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	cfg := ingress.DefaultHTTPConfig()
	cfg.ReadTimeout, cfg.MaxConnections = 200*time.Millisecond, limit
	require.NoError(t, cfg.Validate())
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &countingListener{Listener: raw}
	hs, lln := ingress.NewHTTPServer(h, ln, cfg, nil)
	go func() { _ = hs.Serve(lln) }()
	t.Cleanup(func() { hs.Close() })

	var wg sync.WaitGroup
	closed := make([]bool, clients)
	for i := range clients {
		wg.Go(func() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab")
			// A bound for the test only: the server must hang up well
			// before it (40 clients / 8 at once x 200 ms).
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err = io.ReadAll(c)
			var ne net.Error
			closed[i] = err == nil || !(errorAs(err, &ne) && ne.Timeout())
		})
	}
	wg.Wait()
	for i, ok := range closed {
		require.Truef(t, ok, "client %d was not disconnected", i)
	}
	require.LessOrEqual(t, ln.most.Load(), int64(limit), "connections held at once")
	require.Positive(t, ln.most.Load())

	resp, err := http.Post("http://"+ln.Addr().String(), "text/plain", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "ok", string(b))
}

// countingListener tracks how many accepted connections are open at once.
type countingListener struct {
	net.Listener
	open, most atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for m := l.most.Load(); n > m && !l.most.CompareAndSwap(m, n); m = l.most.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// errorAs is errors.As for net.Error targets.
func errorAs(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}

// TestServeShutsDownGracefully: when ctx ends, Serve stops accepting and
// returns nil once the request in flight has been answered; a listener
// that fails makes it return the error at once.
func TestServeShutsDownGracefully(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- ingress.Serve(ctx, &http.Server{Handler: h}, ln, time.Minute) }()
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			body <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body <- string(b)
	}()
	<-entered
	cancel()
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	require.Equal(t, "done", <-body)
	require.NoError(t, <-served)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	err = ingress.Serve(context.Background(), &http.Server{Handler: h}, closed, time.Minute)
	require.ErrorIs(t, err, net.ErrClosed)
}
