package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// TestAdmissionWaitsThenGrants: with memory for the weights plus one
// session's caches, a second session waits (a Waiting frame, the queue in
// /v1/info) while the first is open, the first keeps stepping meanwhile on
// the same connection (the Open waits off the read loop), and the second is
// granted once the first closes.
func TestAdmissionWaitsThenGrants(t *testing.T) {
	info := modelInfo(t)
	span := swarm.Span{Start: 0, End: 2}
	const maxLength = 100
	memory := 2*info.BlockBytes + 2*info.CacheBytes(maxLength)
	s := serve(t, newServer(t, span, func(c *server.Config) { c.MemoryBytes = memory }))
	p := s.dial(t)
	first := p.open(openMsg(span, maxLength))

	p.send(&wire.Open{SessionID: "second", Model: "stories260K", Span: span, MaxLength: maxLength, DType: swarm.DTypeF32, AllocTimeout: 600})
	w := expect[*wire.Waiting](p)
	require.Equal(t, wire.Waiting{SessionID: "second", Position: 0, QueueLen: 1, EstimatedWait: w.EstimatedWait}, *w)
	require.GreaterOrEqual(t, w.EstimatedWait, 0.0)
	snap := s.srv.Info().Admission
	require.Len(t, snap.Open, 1)
	require.Len(t, snap.Queue, 1)
	require.Equal(t, "second", snap.Queue[0].SessionID)
	require.Zero(t, s.srv.Info().CacheBytesFree)

	p.send(&wire.Step{SessionID: first, Position: 0, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 64, Data: hidden(1, 0)}})
	require.Equal(t, first, expect[*wire.Result](p).SessionID, "the waiting Open does not block other sessions' steps")

	p.send(&wire.Close{SessionID: first})
	require.Equal(t, first, expect[*wire.Closed](p).SessionID)
	g := expect[*wire.Granted](p)
	require.Equal(t, "second", g.SessionID)
	require.Positive(t, g.Waited)
	require.Equal(t, 2*info.CacheBytes(maxLength), g.CacheBytes, "k * s_c")
	require.Empty(t, s.srv.Info().Admission.Queue)
}

// TestAdmissionRefusals: a session that can never fit gets NoRoom at once;
// with alloc_timeout 0 and no room now, Timeout; a session cap of 1 queues
// the second session even with memory to spare.
func TestAdmissionRefusals(t *testing.T) {
	info := modelInfo(t)
	span := swarm.Span{Start: 0, End: 2}
	memory := 2*info.BlockBytes + 2*info.CacheBytes(100)
	s := serve(t, newServer(t, span, func(c *server.Config) { c.MemoryBytes = memory }))
	p := s.dial(t)

	p.send(&wire.Open{SessionID: "huge", Model: "stories260K", Span: span, MaxLength: 101, DType: swarm.DTypeF32, AllocTimeout: 600})
	e := expect[*wire.Error](p)
	require.Equal(t, wire.CodeNoRoom, e.Code)
	require.Equal(t, "huge", e.SessionID)
	require.Contains(t, e.Message, "2 blocks x 101 tokens need 51712 cache bytes, but only 51200")

	p.open(openMsg(span, 100))
	p.send(&wire.Open{SessionID: "now", Model: "stories260K", Span: span, MaxLength: 10, DType: swarm.DTypeF32, AllocTimeout: 0})
	e = expect[*wire.Error](p)
	require.Equal(t, wire.CodeTimeout, e.Code)
	require.Contains(t, e.Message, "alloc_timeout is 0")

	capped := serve(t, newServer(t, span, func(c *server.Config) { c.MaxSessions = 1 }))
	q := capped.dial(t)
	q.open(openMsg(span, 10))
	q.send(&wire.Open{SessionID: "capped", Model: "stories260K", Span: span, MaxLength: 10, DType: swarm.DTypeF32, AllocTimeout: 600})
	require.Equal(t, "capped", expect[*wire.Waiting](q).SessionID)
}
