package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// TestShutdownDrains: once Shutdown starts, /v1/info says draining and new
// Opens get ShuttingDown, but the open session keeps stepping, and Shutdown
// returns only after it closes.
func TestShutdownDrains(t *testing.T) {
	span := swarm.Span{Start: 0, End: 2}
	s := serve(t, newServer(t, span, func(c *server.Config) { c.DrainTimeout = time.Hour }))
	p := s.dial(t)
	sid := p.open(openMsg(span, 8))

	done := make(chan struct{})
	go func() {
		s.srv.Shutdown(context.Background())
		close(done)
	}()
	<-s.srv.Draining()
	require.Equal(t, api.StateDraining, s.srv.Info().State)
	require.True(t, s.srv.Info().Admission.Closed)

	p.send(&wire.Open{SessionID: "late", Model: "stories260K", Span: span, MaxLength: 8, DType: swarm.DTypeF32, AllocTimeout: 60})
	e := expect[*wire.Error](p)
	require.Equal(t, wire.CodeShuttingDown, e.Code)
	require.Equal(t, "late", e.SessionID)

	p.send(&wire.Step{SessionID: sid, Position: 0, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 64, Data: hidden(1, 0)}})
	require.Equal(t, sid, expect[*wire.Result](p).SessionID, "open sessions still run")
	select {
	case <-done:
		t.Fatal("Shutdown returned while a session was open")
	default:
	}
	p.send(&wire.Close{SessionID: sid})
	require.Equal(t, sid, expect[*wire.Closed](p).SessionID)
	<-done
	require.ErrorIs(t, p.closed(), api.ErrClosed, "Shutdown closes the connections")
}

// TestShutdownTellsSessionsToFailOver: after the drain timeout (0 here),
// every open session gets an Error frame with CodeShuttingDown and the
// connection closes; a queued Open gets ShuttingDown too.
func TestShutdownTellsSessionsToFailOver(t *testing.T) {
	info := modelInfo(t)
	span := swarm.Span{Start: 0, End: 2}
	s := serve(t, newServer(t, span, func(c *server.Config) {
		c.DrainTimeout = 0
		c.MemoryBytes = 2*info.BlockBytes + 2*info.CacheBytes(8)
	}))
	p := s.dial(t)
	sid := p.open(openMsg(span, 8))
	q := s.dial(t)
	q.send(&wire.Open{SessionID: "queued", Model: "stories260K", Span: span, MaxLength: 8, DType: swarm.DTypeF32, AllocTimeout: 600})
	require.Equal(t, "queued", expect[*wire.Waiting](q).SessionID)

	s.srv.Shutdown(context.Background())
	e := expect[*wire.Error](p)
	require.Equal(t, wire.CodeShuttingDown, e.Code)
	require.Equal(t, sid, e.SessionID)
	require.Contains(t, e.Message, "drain timeout")
	require.ErrorIs(t, p.closed(), api.ErrClosed)

	e = expect[*wire.Error](q)
	require.Equal(t, wire.CodeShuttingDown, e.Code)
	require.Equal(t, "queued", e.SessionID)
}
