package server_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/servertest"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// The InMem admission tests are the in-memory twins of the admission tests:
// a server of a synthesized model on a servertest.Network, inside a
// synctest bubble, so that waits and alloc timeouts run on the fake clock
// and are measured exactly. They need neither ../shared nor sockets.

// memSpan is the span of the admission tests' server; memMaxLength the
// sessions its memory fits one of.
var memSpan = swarm.Span{Start: 0, End: 2}

const memMaxLength = 30

// memAdmission starts a server over memSpan of m with memory for its
// weights and the caches of one session of memMaxLength, no idle timeout
// and the changes of configure, and dials it.
func memAdmission(t *testing.T, m *servertest.Model, configure ...func(*server.Config)) (*servertest.Server, *peer) {
	t.Helper()
	info := m.Info()
	memory := 2*info.BlockBytes + 2*info.CacheBytes(memMaxLength)
	n := servertest.NewNetwork(t, m)
	s := n.Start("a", memSpan, func(c *server.Config) {
		c.MemoryBytes = memory
		c.SessionIdleTimeout = 0 // sessions wait minutes on the fake clock here
		for _, f := range configure {
			f(c)
		}
	})
	ep, err := api.ParseEndpoint(s.Addr)
	require.NoError(t, err)
	fc, err := n.Dial(t.Context(), ep, 0)
	require.NoError(t, err)
	return s, newPeer(t, fc)
}

// memOpen is an Open of m's model over memSpan.
func memOpen(m *servertest.Model, sid string, maxLength int, allocTimeout float64) *wire.Open {
	return &wire.Open{SessionID: sid, Model: m.Info().Name, Span: memSpan, MaxLength: maxLength, DType: swarm.DTypeF32, AllocTimeout: allocTimeout}
}

// TestInMemAdmissionQueuesThenGrants: with memory for one session, a
// second one waits (a Waiting frame, the queue in Info) while the first
// keeps stepping on the same connection; a minute later on the fake clock
// it still waits, and it is granted the moment the first closes, having
// waited exactly that minute.
func TestInMemAdmissionQueuesThenGrants(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	local := m.Session(t, memSpan, memMaxLength)
	x, err := m.Head().Embed([]int{5, 6, 7})
	require.NoError(t, err)
	want, err := local.Forward(t.Context(), 0, x, 3)
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		s, p := memAdmission(t, m)
		p.send(memOpen(m, "first", memMaxLength, 60))
		require.Equal(t, "first", expect[*wire.Granted](p).SessionID)

		p.send(memOpen(m, "second", memMaxLength, 600))
		w := expect[*wire.Waiting](p)
		require.Equal(t, wire.Waiting{SessionID: "second", Position: 0, QueueLen: 1, EstimatedWait: w.EstimatedWait}, *w)
		adm := s.Info().Admission
		require.Len(t, adm.Open, 1)
		require.Len(t, adm.Queue, 1)
		require.Equal(t, "second", adm.Queue[0].SessionID)
		require.Zero(t, s.Info().CacheBytesFree)

		p.send(&wire.Step{SessionID: "first", Position: 0, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 3, DModel: m.Info().DModel, Data: x}})
		r := expect[*wire.Result](p)
		require.Equal(t, want, r.Hidden.Data, "the waiting Open does not hold up the first session's steps")

		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, p.frames, "still waiting a minute later")
		require.Equal(t, 60.0, s.Info().Admission.Queue[0].Waited)

		p.send(&wire.Close{SessionID: "first"})
		require.Equal(t, "first", expect[*wire.Closed](p).SessionID)
		g := expect[*wire.Granted](p)
		require.Equal(t, "second", g.SessionID)
		require.Equal(t, 60.0, g.Waited, "seconds on the fake clock")
		require.Equal(t, 2*m.Info().CacheBytes(memMaxLength), g.CacheBytes, "k * s_c")
		adm = s.Info().Admission
		require.Empty(t, adm.Queue)
		require.Len(t, adm.Open, 1)
		require.Equal(t, "second", adm.Open[0].SessionID)
	})
}

// TestInMemAdmissionRefusals: a session that can never fit gets NoRoom at
// once, even with a long alloc timeout; with no room now, alloc_timeout 0
// gets Timeout at once and alloc_timeout 30 gets it after exactly 30 s on
// the fake clock, leaving the queue empty.
func TestInMemAdmissionRefusals(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	synctest.Test(t, func(t *testing.T) {
		s, p := memAdmission(t, m)
		start := time.Now()
		p.send(memOpen(m, "huge", memMaxLength+1, 600))
		e := expect[*wire.Error](p)
		require.Equal(t, wire.CodeNoRoom, e.Code)
		require.Equal(t, "huge", e.SessionID)
		require.Contains(t, e.Message, "2 blocks x 31 tokens need")
		require.Zero(t, time.Since(start), "at once")

		p.send(memOpen(m, "first", memMaxLength, 60))
		require.IsType(t, &wire.Granted{}, p.next())
		p.send(memOpen(m, "now", 10, 0))
		e = expect[*wire.Error](p)
		require.Equal(t, wire.CodeTimeout, e.Code)
		require.Contains(t, e.Message, "alloc_timeout is 0")
		require.Zero(t, time.Since(start), "at once")

		p.send(memOpen(m, "patient", 10, 30))
		require.Equal(t, "patient", expect[*wire.Waiting](p).SessionID)
		f := <-p.frames // no bound: were it never to come, the bubble would deadlock and fail
		e, ok := f.(*wire.Error)
		require.Truef(t, ok, "got %T %+v, want the alloc timeout", f, f)
		require.Equal(t, wire.CodeTimeout, e.Code)
		require.Equal(t, "patient", e.SessionID)
		require.Equal(t, 30*time.Second, time.Since(start), "the alloc timeout runs on the fake clock")
		require.Empty(t, s.Info().Admission.Queue)
		require.Len(t, s.Info().Admission.Open, 1)
	})
}
