package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// closedAddress returns a loopback address nobody listens on.
func closedAddress(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestOpenNoChain: with blocks 2..3 hosted only by a server of another
// model and a candidate that is down, Open fails with a NoChainError naming
// the uncovered blocks and why each candidate was left out.
func TestOpenNoChain(t *testing.T) {
	model := stories(t, "stories260K.bin")
	other := filepath.Join(t.TempDir(), "other.gguf")
	cfg := synth.DefaultConfig()
	cfg.Layers = 5
	require.NoError(t, synth.WriteGGUF(other, cfg))

	a := startServer(t, model, swarm.Span{Start: 0, End: 2}, nil)
	b := startServer(t, model, swarm.Span{Start: 4, End: 5}, nil)
	wrong := startServer(t, other, swarm.Span{Start: 2, End: 4}, nil)
	down := closedAddress(t)
	c, err := client.New(loadHead(t, model), []string{a.url, b.url, wrong.url, down})
	require.NoError(t, err)

	cands := c.Candidates(context.Background())
	require.Len(t, cands, 4)
	require.NoError(t, cands[0].Err)
	require.Positive(t, cands[0].RTT)
	require.Equal(t, swarm.Span{Start: 0, End: 2}, cands[0].Info.Span)
	require.ErrorIs(t, cands[2].Err, client.ErrModelMismatch)
	require.ErrorContains(t, cands[3].Err, "connection refused")

	_, err = c.Open(context.Background(), 100)
	require.ErrorIs(t, err, client.ErrNoChain)
	var nc *client.NoChainError
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []swarm.Span{{Start: 2, End: 4}}, nc.Uncovered)
	require.Len(t, nc.Unusable, 2)
	require.ErrorContains(t, err, "no usable server hosts blocks 2:4")
	require.ErrorContains(t, err, `server's name is synth, the client's model has stories260K`)
	require.ErrorContains(t, err, down)
}

// TestOpenAvoidsServerWithoutRoom: a server whose memory cannot hold the
// session's caches is never chosen (its eq. 20 wait is infinite).
func TestOpenAvoidsServerWithoutRoom(t *testing.T) {
	model := stories(t, "stories260K.bin")
	info := loadHead(t, model).Info()
	small := startServer(t, model, swarm.Span{Start: 0, End: 5}, func(c *server.Config) {
		c.MemoryBytes = 5*info.BlockBytes + 5*info.CacheBytes(50)
	})
	big := startServer(t, model, swarm.Span{Start: 0, End: 5}, func(c *server.Config) { c.EmulateLatency = 2 * time.Millisecond })
	c, err := client.New(loadHead(t, model), []string{small.url, big.url})
	require.NoError(t, err)
	sess, err := c.Open(context.Background(), 100)
	require.NoError(t, err)
	defer sess.Close()
	require.Equal(t, big.url, sess.Chain()[0].Server)
}

// TestOpenSkipsServerThatRefuses: a server that looks free but refuses the
// session when asked (its --max-sessions is reached, which /v1/info's
// memory figures do not show, and the alloc timeout is 0) is left out and
// the chain chosen again.
func TestOpenSkipsServerThatRefuses(t *testing.T) {
	model := stories(t, "stories260K.bin")
	capped := startServer(t, model, swarm.Span{Start: 0, End: 5}, func(c *server.Config) { c.MaxSessions = 1 })
	// other's emulated latency dwarfs the noise of measured RTTs and tau on
	// a loaded machine, so that WS-RR tries capped first (2 ms did not).
	other := startServer(t, model, swarm.Span{Start: 0, End: 5}, func(c *server.Config) { c.EmulateLatency = 25 * time.Millisecond })
	only, err := client.New(loadHead(t, model), []string{capped.url})
	require.NoError(t, err)
	holder, err := only.Open(context.Background(), 100)
	require.NoError(t, err)
	defer holder.Close()

	var logs testenv.Buffer
	c, err := client.New(loadHead(t, model), []string{capped.url, other.url}, client.WithAllocTimeout(0),
		client.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	sess, err := c.Open(context.Background(), 100)
	require.NoError(t, err)
	defer sess.Close()
	require.Equal(t, other.url, sess.Chain()[0].Server)
	require.Contains(t, logs.String(), "choosing again without it", "the capped server was tried first")
	require.Contains(t, logs.String(), capped.url)
}

// TestWaitHook: a server with room for one session queues a second; the
// client reports the Waiting frame through the hook and opens the session
// once the first closes.
func TestWaitHook(t *testing.T) {
	model := stories(t, "stories260K.bin")
	info := loadHead(t, model).Info()
	srv := startServer(t, model, swarm.Span{Start: 0, End: 5}, func(c *server.Config) {
		c.MemoryBytes = 5*info.BlockBytes + 5*info.CacheBytes(100)
	})
	events := make(chan client.WaitEvent, 4)
	c, err := client.New(loadHead(t, model), []string{srv.url}, client.WithWaitHook(func(e client.WaitEvent) { events <- e }))
	require.NoError(t, err)
	first, err := c.Open(context.Background(), 100)
	require.NoError(t, err)

	opened := make(chan error, 1)
	var second *client.Session
	go func() {
		var err error
		second, err = c.Open(context.Background(), 100)
		opened <- err
	}()
	e := <-events
	require.Equal(t, client.WaitEvent{Server: srv.url, Span: swarm.Span{Start: 0, End: 5}, Position: 0, QueueLen: 1, EstimatedWait: e.EstimatedWait}, e)
	require.Len(t, srv.srv.Info().Admission.Queue, 1)
	select {
	case err := <-opened:
		t.Fatalf("second session opened while the first holds the memory: %v", err)
	default:
	}
	require.NoError(t, first.Close())
	require.NoError(t, <-opened)
	defer second.Close()
	require.Equal(t, referenceText(t)[:100], generate(t, second, 100, nil)[:100])
}

// TestOpenAllocTimeout: with alloc timeout 0, a full server answers at once
// and the session cannot open anywhere.
func TestOpenAllocTimeout(t *testing.T) {
	model := stories(t, "stories260K.bin")
	info := loadHead(t, model).Info()
	srv := startServer(t, model, swarm.Span{Start: 0, End: 5}, func(c *server.Config) {
		c.MemoryBytes = 5*info.BlockBytes + 5*info.CacheBytes(100)
	})
	c, err := client.New(loadHead(t, model), []string{srv.url}, client.WithAllocTimeout(0))
	require.NoError(t, err)
	first, err := c.Open(context.Background(), 100)
	require.NoError(t, err)
	defer first.Close()
	_, err = c.Open(context.Background(), 100)
	require.ErrorIs(t, err, client.ErrNoChain)
	require.ErrorContains(t, err, "Timeout")
}

// TestForwardArguments checks the argument errors of Forward and use after
// Close.
func TestForwardArguments(t *testing.T) {
	model := stories(t, "stories260K.bin")
	srv := startServer(t, model, swarm.Span{Start: 0, End: 5}, nil)
	c, err := client.New(loadHead(t, model), []string{srv.url})
	require.NoError(t, err)
	sess, err := c.Open(context.Background(), 8)
	require.NoError(t, err)
	x := make([]float32, 64)
	for name, call := range map[string]func() error{
		"short hidden":    func() error { _, err := sess.Forward(context.Background(), 0, x[:10], 1); return err },
		"zero tokens":     func() error { _, err := sess.Forward(context.Background(), 0, nil, 0); return err },
		"past max length": func() error { _, err := sess.Forward(context.Background(), 8, x, 1); return err },
		"gap":             func() error { _, err := sess.Forward(context.Background(), 1, x, 1); return err },
		"negative":        func() error { _, err := sess.Forward(context.Background(), -1, x, 1); return err },
	} {
		require.ErrorIs(t, call(), client.ErrArgument, name)
	}
	y, err := sess.Forward(context.Background(), 0, x, 1)
	require.NoError(t, err)
	require.Len(t, y, 64)
	var g error
	for _, err := range sess.Generate(context.Background(), []int{1}, 9, greedy(t)) {
		g = err
	}
	require.ErrorIs(t, g, client.ErrArgument, "1 + 9 - 1 positions > 8")
	require.NoError(t, sess.Close())
	require.NoError(t, sess.Close(), "idempotent")
	_, err = sess.Forward(context.Background(), 0, x, 1)
	require.ErrorIs(t, err, client.ErrClosed)
	require.Empty(t, srv.srv.Info().Sessions, "Close released the server's session")
}

// TestNewErrors checks New's argument errors.
func TestNewErrors(t *testing.T) {
	head := loadHead(t, stories(t, "stories260K.bin"))
	tests := []struct {
		name    string
		servers []string
		opts    []client.Option
		want    error
	}{
		{"no servers", nil, nil, client.ErrBadOption},
		{"bad address", []string{"ftp://x:1"}, nil, api.ErrBadAddress},
		{"no port", []string{"localhost"}, nil, api.ErrBadAddress},
		{"zero step timeout", []string{"a:1"}, []client.Option{client.WithStepTimeout(0)}, client.ErrBadOption},
		{"negative alloc timeout", []string{"a:1"}, []client.Option{client.WithAllocTimeout(-1)}, client.ErrBadOption},
		{"q8 on the wire", []string{"a:1"}, []client.Option{client.WithWireDType(swarm.DTypeQ8_0)}, client.ErrBadOption},
		{"negative replay chunk", []string{"a:1"}, []client.Option{client.WithReplayChunk(-1)}, client.ErrBadOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.New(head, tt.servers, tt.opts...)
			require.True(t, errors.Is(err, tt.want), "%v", err)
		})
	}
	_, err := client.New(nil, []string{"a:1"})
	require.ErrorIs(t, err, client.ErrBadOption)
}
