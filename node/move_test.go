package node

import (
	"cmp"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// moveFleet is a swarm of stories260K for span-move tests: B serves 0:2
// and C 3:5 (fixed servers on their libp2p streams), A is a RunServer on
// 0:3 with a loopback websocket, so that block 2 is A's alone; a client
// member routes through the registry.
type moveFleet struct {
	a      *member
	served Serving
	moves  chan MoveEvent
	cands  *Candidates
	cl     *client.Client
	client *Member
}

// moveRegistry is registrytest.LoopbackConfig with a lenient SuspectAfter:
// these tests assert that no session fails over, and a client closes its
// connections to a server its registry suspects (closeSuspected), which a
// heartbeat late by 1.5 s on a loaded machine under -race would cause.
func moveRegistry() registry.Config {
	rc := registrytest.LoopbackConfig()
	rc.SuspectAfter, rc.LeftAfter = 20*time.Second, 40*time.Second
	return rc
}

// startMoveFleet starts the fleet; A has memory bytes of M_j and drains
// for at most drain (0: long enough for a whole story, so that an open
// session ends on its own). hook, if not nil, is called with each move
// event before it is queued on moves.
func startMoveFleet(t *testing.T, memory int64, drain time.Duration, hook func(MoveEvent)) *moveFleet {
	t.Helper()
	cache := t.TempDir()
	boot := joinMemberWith(t, registrytest.P2PConfig(nil), moveRegistry())
	f := &moveFleet{a: joinMemberWith(t, registrytest.P2PConfig(boot.node), moveRegistry()), moves: make(chan MoveEvent, 16)}
	for _, s := range []swarm.Span{span(0, 2), span(3, 5)} {
		m := joinMemberWith(t, registrytest.P2PConfig(boot.node), moveRegistry())
		srv := startServer(t, s, cache)
		t.Cleanup(ServeStreams(m.node.Host(), srv, 0))
		publishServing(t, m, srv, m.addrs()...)
	}
	cfg := serverConfig(t, cache, boot)
	cfg.Auto, cfg.Server.Blocks, cfg.Server.Listen, cfg.Server.MemoryBytes = false, span(0, 3), "127.0.0.1:0", memory
	cfg.Server.DrainTimeout = cmp.Or(drain, p2pTimeout)
	cfg.OnMove = func(ev MoveEvent) {
		if hook != nil {
			hook(ev)
		}
		f.moves <- ev
	}
	_, ready, _ := runServer(t, f.a, cfg)
	select {
	case f.served = <-ready:
	case <-time.After(p2pTimeout):
		t.Fatal("A never served")
	}

	jctx, jcancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer jcancel()
	cn, err := JoinClient(jctx, registrytest.P2PConfig(boot.node), moveRegistry(), p2pOptions()...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cn.Close()) })
	f.client = cn
	head := loadHead(t)
	f.cands, err = NewCandidates(f.client.Registry, head.Info())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	require.NoError(t, f.cands.WaitCovered(ctx))
	f.cl, err = client.New(head, nil, f.cands.ClientOptions(f.client.Node.Host())...)
	require.NoError(t, err)
	return f
}

// nextMove returns the next move event.
func (f *moveFleet) nextMove(t *testing.T) MoveEvent {
	t.Helper()
	select {
	case ev := <-f.moves:
		return ev
	case <-time.After(p2pTimeout):
		t.Fatal("no move event")
		return MoveEvent{}
	}
}

// hopAt returns the hop of chain served by url.
func hopAt(t *testing.T, chain []client.HopStats, url string) client.HopStats {
	t.Helper()
	for _, h := range chain {
		if h.Server == url {
			return h
		}
	}
	t.Fatalf("no hop at %s in %+v", url, chain)
	return client.HopStats{}
}

// waitEntry waits until reg's entry of id satisfies cond and returns it.
func waitEntry(t *testing.T, reg *registry.Registry, id, what string, cond func(registry.Entry) bool) registry.Entry {
	t.Helper()
	var e registry.Entry
	require.Eventually(t, func() bool {
		var ok bool
		e, ok = reg.Get(id)
		return ok && cond(e)
	}, p2pTimeout, 5*time.Millisecond, "waiting for %s", what)
	return e
}

// phase is the part of an entry a move changes.
type phase struct {
	State              swarm.LifecycleState
	Span               swarm.Span
	MovingTo, Draining swarm.Span
}

// recordPhases records the distinct successive phases of node id in reg,
// from its current entry on (its own replica sees every version it
// writes), until the returned
// function is called, which returns them.
func recordPhases(t *testing.T, reg *registry.Registry, id string) func() []phase {
	ctx, cancel := context.WithCancel(t.Context())
	w := reg.Watch(ctx)
	var out []phase
	add := func(e registry.Entry) {
		p := phase{e.State, e.Info.Span, e.Info.MovingTo, e.Info.Draining}
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	e, ok := reg.Get(id) // after Watch: no change is missed
	require.True(t, ok)
	add(e)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w {
			if ev.Entry.NodeID == id {
				add(ev.Entry)
			}
		}
	}()
	return func() []phase {
		cancel()
		<-done
		return out
	}
}

// sampleCoverage computes the model's coverage in reg at every change
// until the returned function is called, which returns the uncovered
// blocks seen (one slice per sample with gaps).
func sampleCoverage(t *testing.T, reg *registry.Registry) func() (samples int, gaps [][]swarm.Span) {
	ctx, cancel := context.WithCancel(t.Context())
	w := reg.Watch(ctx)
	var mu sync.Mutex
	n := 0
	var seen [][]swarm.Span
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range w {
			for _, c := range BlockCoverage(reg.Snapshot()) {
				mu.Lock()
				n++
				if len(c.Uncovered) > 0 {
					seen = append(seen, c.Uncovered)
				}
				mu.Unlock()
			}
		}
	}()
	return func() (int, [][]swarm.Span) {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return n, seen
	}
}

// TestMove_MakeBeforeBreak moves A from 0:3 to 2:5 while a session is
// open on it, with memory M_j = memoryFor(6) for both spans: A announces
// SERVING 0:3 moving to 2:5, then SERVING 2:5 draining 0:3 at a new
// websocket URL, then SERVING 2:5. The open session finishes llama2.c's
// reference story on the old span with no failover (its old URL stays
// healthy); a session opened during the move routes block 2 to A's new
// span and gives the reference story too; the move is done
// only once the old session closed; and the client's registry never shows
// a block uncovered.
func TestMove_MakeBeforeBreak(t *testing.T) {
	f := startMoveFleet(t, memoryFor(6), 0, nil)
	before, ok := f.a.reg.Get(f.a.reg.ID())
	require.True(t, ok)
	phases := recordPhases(t, f.a.reg, f.a.reg.ID())
	coverage := sampleCoverage(t, f.client.Registry)
	ctx, cancel := context.WithTimeout(t.Context(), 2*p2pTimeout)
	defer cancel()

	moved := make(chan error, 1)
	var oldSess *client.Session
	var newStats client.Stats
	var newURL string // the new span's websocket
	text := generate(t, ctx, f.cl, 200, func(s *client.Session) {
		oldSess = s
		go func() { moved <- f.served.Mover.Move(ctx, span(2, 5)) }()
		require.Equal(t, MoveEvent{Step: MoveStarted, From: span(0, 3), To: span(2, 5)}, f.nextMove(t))
		require.Equal(t, MoveEvent{Step: MoveSwitched, From: span(0, 3), To: span(2, 5)}, f.nextMove(t))
		e := waitEntry(t, f.client.Registry, f.a.reg.ID(), "SERVING 2:5 in the client's registry", func(e registry.Entry) bool {
			return e.State == swarm.StateServing && e.Info.Span == span(2, 5)
		})
		newURL = e.Info.Endpoints[0]
		// A new session, while the first is open on the old span.
		text := generate(t, ctx, f.cl, 200, func(s *client.Session) { newStats = s.Stats() })
		require.Equal(t, referenceText(t), text, "a session opened during the move")
		select {
		case err := <-moved:
			t.Fatalf("the move ended (%v) while a session is open on the old span", err)
		default:
		}
	})
	require.Equal(t, referenceText(t), text, "the session open on the old span")
	require.NoError(t, <-moved)
	require.Equal(t, MoveEvent{Step: MoveDone, From: span(0, 3), To: span(2, 5)}, f.nextMove(t))

	oldStats := oldSess.Stats()
	require.Empty(t, oldStats.Replaced, "no failover: the old span served the session to its end")
	old := hopAt(t, oldStats.Hops, f.served.URL)
	require.True(t, span(0, 3).ContainsSpan(old.Span) && old.Span.Contains(2), "old session on A: %s", old.Span)
	require.NotEqual(t, f.served.URL, newURL, "the new span has a websocket of its own")
	nw := hopAt(t, newStats.Hops, newURL)
	require.True(t, span(2, 5).ContainsSpan(nw.Span) && nw.Span.Contains(2), "new session on A: %s", nw.Span)

	e := waitEntry(t, f.client.Registry, f.a.reg.ID(), "the move done", func(e registry.Entry) bool {
		return e.State == swarm.StateServing && e.Info.Draining.Empty()
	})
	require.Equal(t, span(2, 5), e.Info.Span)
	require.Empty(t, e.Info.MovingTo)
	require.Equal(t, newURL, e.Info.Endpoints[0])
	require.Equal(t, memoryFor(6)-3*181760, e.Info.CacheBytesFree, "M - 3 blocks of weights: nothing reserved any more")
	require.Equal(t, before.Info.Tau, e.Info.Tau, "tau_j is per block: the moved server keeps its measurement")
	require.Equal(t, before.Info.TauI, e.Info.TauI)

	samples, gaps := coverage()
	require.Empty(t, gaps, "make-before-break: no block uncovered")
	require.Positive(t, samples)
	require.Equal(t, []phase{
		{swarm.StateServing, span(0, 3), swarm.Span{}, swarm.Span{}},
		{swarm.StateServing, span(0, 3), span(2, 5), swarm.Span{}},
		{swarm.StateServing, span(2, 5), swarm.Span{}, span(0, 3)},
		{swarm.StateServing, span(2, 5), swarm.Span{}, swarm.Span{}},
	}, phases())
}

// TestMove_DrainFirst moves A from 0:3 to 2:5 with memory M_j =
// memoryFor(3), which cannot hold both spans' weights: A announces JOIN
// 2:5 draining 0:3 (the client's registry shows block 2 uncovered: no new
// session is routed to the old span), the session open on it finishes the
// reference story there (the client keeps it: Health), then A loads 2:5
// and announces SERVING; a new session routes block 2 to it. The coverage
// sampler of TestMove_MakeBeforeBreak sees block 2 uncovered here. A
// second move asked during the first is refused.
func TestMove_DrainFirst(t *testing.T) {
	f := startMoveFleet(t, memoryFor(3), 0, nil)
	phases := recordPhases(t, f.a.reg, f.a.reg.ID())
	coverage := sampleCoverage(t, f.client.Registry)
	before, ok := f.a.reg.Get(f.a.reg.ID())
	require.True(t, ok)
	ctx, cancel := context.WithTimeout(t.Context(), 2*p2pTimeout)
	defer cancel()

	moved := make(chan error, 1)
	var oldSess *client.Session
	text := generate(t, ctx, f.cl, 200, func(s *client.Session) {
		oldSess = s
		go func() { moved <- f.served.Mover.Move(ctx, span(2, 5)) }()
		require.Equal(t, MoveEvent{Step: MoveStarted, From: span(0, 3), To: span(2, 5), DrainFirst: true}, f.nextMove(t))
		require.ErrorIs(t, f.served.Mover.Move(ctx, span(0, 1)), ErrMove, "one move at a time")
		waitEntry(t, f.client.Registry, f.a.reg.ID(), "JOIN draining in the client's registry", func(e registry.Entry) bool {
			return e.State == swarm.StateJoin && e.Info.Draining == span(0, 3) && e.Info.Span == span(2, 5)
		})
		require.Equal(t, []swarm.Span{span(2, 3)}, f.cands.Uncovered(), "no new session on the old span")
		ep, err := api.ParseEndpoint(f.served.URL)
		require.NoError(t, err)
		require.NoError(t, f.cands.Health(ep), "the open session keeps its server")
	})
	require.Equal(t, referenceText(t), text, "the session open on the old span")
	oldStats := oldSess.Stats()
	require.Empty(t, oldStats.Replaced, "no failover: the old span served the session to its end")
	old := hopAt(t, oldStats.Hops, f.served.URL)
	require.True(t, span(0, 3).ContainsSpan(old.Span) && old.Span.Contains(2), "old session on A: %s", old.Span)
	require.NoError(t, <-moved)
	require.Equal(t, MoveEvent{Step: MoveSwitched, From: span(0, 3), To: span(2, 5), DrainFirst: true}, f.nextMove(t))
	require.Equal(t, MoveEvent{Step: MoveDone, From: span(0, 3), To: span(2, 5), DrainFirst: true}, f.nextMove(t))

	e := waitEntry(t, f.client.Registry, f.a.reg.ID(), "SERVING 2:5", func(e registry.Entry) bool {
		return e.State == swarm.StateServing && e.Info.Span == span(2, 5)
	})
	require.Equal(t, f.served.URL, e.Info.Endpoints[0], "drained first: the same listener")
	var chain []client.HopStats
	text = generate(t, ctx, f.cl, 200, func(s *client.Session) { chain = s.Chain() })
	require.Equal(t, referenceText(t), text, "a session after the move")
	after, ok := f.a.reg.Get(f.a.reg.ID())
	require.True(t, ok)
	require.Equal(t, span(2, 5), after.Info.Span)
	require.Equal(t, before.Info.Tau, after.Info.Tau, "tau_j is per block: the moved server keeps its measurement")
	nw := hopAt(t, chain, f.served.URL)
	require.True(t, span(2, 5).ContainsSpan(nw.Span) && nw.Span.Contains(2), "new session on A: %s", nw.Span)
	_, gaps := coverage()
	require.Contains(t, gaps, []swarm.Span{span(2, 3)}, "the sampler sees the gap of a drain-first move")
	require.ErrorIs(t, f.served.Mover.Move(ctx, span(3, 9)), ErrMove, "past the model's 5 blocks")
	require.NoError(t, f.served.Mover.Move(ctx, span(2, 5)), "already there")
	require.Empty(t, f.moves, "refused and empty moves report nothing")
	require.Equal(t, []phase{
		{swarm.StateServing, span(0, 3), swarm.Span{}, swarm.Span{}},
		{swarm.StateJoin, span(2, 5), swarm.Span{}, span(0, 3)},
		{swarm.StateJoin, span(2, 5), swarm.Span{}, swarm.Span{}},
		{swarm.StateServing, span(2, 5), swarm.Span{}, swarm.Span{}},
	}, phases())
}

// TestMove_RollbackWhenCancelled cancels a make-before-break move as it
// starts, before the new span is loaded: the move fails with the
// cancellation, A announces SERVING 0:3 again without MovingTo and with
// no memory reserved, and sessions still route block 2 to it.
func TestMove_RollbackWhenCancelled(t *testing.T) {
	mctx, cancelMove := context.WithCancel(t.Context())
	f := startMoveFleet(t, memoryFor(6), 0, func(ev MoveEvent) {
		if ev.Step == MoveStarted {
			cancelMove()
		}
	})
	phases := recordPhases(t, f.a.reg, f.a.reg.ID())
	err := f.served.Mover.Move(mctx, span(2, 5))
	require.ErrorIs(t, err, ErrMove)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, MoveStep(MoveStarted), f.nextMove(t).Step)
	failed := f.nextMove(t)
	require.Equal(t, MoveFailed, failed.Step)
	require.ErrorIs(t, failed.Err, context.Canceled)

	e := waitEntry(t, f.a.reg, f.a.reg.ID(), "rolled back", func(e registry.Entry) bool { return e.Info.MovingTo.Empty() })
	require.Equal(t, swarm.StateServing, e.State)
	require.Equal(t, span(0, 3), e.Info.Span)
	require.Equal(t, memoryFor(6)-3*181760, e.Info.CacheBytesFree, "M - 3 blocks of weights: nothing reserved any more")
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	var chain []client.HopStats
	require.Equal(t, referenceText(t), generate(t, ctx, f.cl, 200, func(s *client.Session) { chain = s.Chain() }))
	h := hopAt(t, chain, f.served.URL)
	require.True(t, span(0, 3).ContainsSpan(h.Span) && h.Span.Contains(2), "session on A: %s", h.Span)
	require.Equal(t, []phase{
		{swarm.StateServing, span(0, 3), swarm.Span{}, swarm.Span{}},
		{swarm.StateServing, span(0, 3), span(2, 5), swarm.Span{}},
		{swarm.StateServing, span(0, 3), swarm.Span{}, swarm.Span{}},
	}, phases())
}

// TestMove_DrainTimeoutFailsOver moves A make-before-break while a
// session is open on its old span and idle past the drain timeout of
// 100 ms: the move ends with the old span closed, and the session's next
// step fails over with replay (as on any shutdown) to the only server of
// block 2, A's new span at its new websocket URL (the client leaves out
// the URL that failed), and still gives the reference story.
func TestMove_DrainTimeoutFailsOver(t *testing.T) {
	f := startMoveFleet(t, memoryFor(6), 100*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*p2pTimeout)
	defer cancel()
	var sess *client.Session
	text := generate(t, ctx, f.cl, 200, func(s *client.Session) {
		sess = s
		require.NoError(t, f.served.Mover.Move(ctx, span(2, 5)), "returns once the drain timed out")
		for _, step := range []MoveStep{MoveStarted, MoveSwitched, MoveDone} {
			require.Equal(t, step, f.nextMove(t).Step)
		}
	})
	require.Equal(t, referenceText(t), text)
	st := sess.Stats()
	require.Len(t, st.Replaced, 1)
	old := st.Replaced[0]
	require.Equal(t, f.served.URL, old.Server)
	require.True(t, span(0, 3).ContainsSpan(old.Span) && old.Span.Contains(2), "old hop on A: %s", old.Span)
	e, ok := f.a.reg.Get(f.a.reg.ID())
	require.True(t, ok)
	require.Equal(t, span(2, 5), e.Info.Span)
	nw := hopAt(t, st.Hops, e.Info.Endpoints[0])
	require.NotEqual(t, f.served.URL, nw.Server)
	require.True(t, span(2, 5).ContainsSpan(nw.Span) && nw.Span.Contains(2), "replacement on A's new span: %s", nw.Span)
	require.Positive(t, nw.Replayed, "the positions before the failover were replayed")
}
