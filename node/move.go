package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// Mover moves a running server (RunServer) to another span of its model:
// the mechanism a plan epoch's moves are executed with (live replanning,
// issue 15). Serving.Mover is one.
type Mover interface {
	// Move moves the server to target and returns once it serves target
	// alone (nil), or why not. One move runs at a time.
	//
	// When its memory M_j holds both spans — the old span's weights and
	// the caches its open sessions hold, plus the weights of target
	// (estimated per block from the old engine's) — the move is
	// make-before-break: it announces SERVING with MovingTo, loads target
	// in a second server beside the first (its admission reserving the
	// old span's memory) with its own websocket listener on the same host
	// (any port; a client whose session fails over leaves out the URL
	// that failed, so the new span needs another one), switches the
	// libp2p stream handlers and both listeners to it and announces
	// SERVING target with Draining and the new URL (new sessions route to
	// target from then on), then drains the old server (sessions open
	// there run until they end or Server.DrainTimeout, then fail over
	// with replay), closes it and its listener. If ctx ends before the
	// switch, the move is rolled back (the old span stays SERVING); after
	// it, ctx only cuts the drain short.
	//
	// Otherwise it drains first: it announces JOIN target with Draining,
	// drains and closes the old server (ctx cuts the drain short), loads
	// target behind the same listener and announces SERVING. If loading
	// fails then, the server has no span: RunServer announces DOWN and
	// returns the error.
	//
	// Errors wrap ErrMove (a bad target, a move already running, the
	// server stopped, or the failure; with ctx.Err() when ctx ended it).
	// Moving to the span already served does nothing.
	Move(ctx context.Context, target swarm.Span) error
}

// MoveStep is a stage of a span move, as MoveEvent reports it.
type MoveStep int

// The stages of a move, in order; a move ends with MoveDone or MoveFailed.
const (
	// MoveStarted: the move is announced (SERVING with MovingTo, or JOIN
	// with Draining when it drains first).
	MoveStarted MoveStep = iota + 1
	// MoveSwitched: the server serves target and announced SERVING with
	// it; make-before-break, the old span still drains.
	MoveSwitched
	// MoveDone: the old span is closed; the server serves target alone.
	MoveDone
	// MoveFailed: the move stopped (MoveEvent.Err says why).
	MoveFailed
)

var moveStepNames = map[MoveStep]string{MoveStarted: "started", MoveSwitched: "switched", MoveDone: "done", MoveFailed: "failed"}

// String returns the stage's name: started, switched, done or failed.
func (s MoveStep) String() string {
	if n, ok := moveStepNames[s]; ok {
		return n
	}
	return fmt.Sprintf("MoveStep(%d)", int(s))
}

// MoveEvent reports the progress of one span move (ServerConfig.OnMove).
type MoveEvent struct {
	Step MoveStep
	// From is the span served before the move, To the target.
	From, To swarm.Span
	// DrainFirst is true when memory could not hold both spans.
	DrainFirst bool
	// Err is why the move failed (MoveFailed only).
	Err error
}

// mover is RunServer's Mover.
type mover struct {
	j      *joiner
	a      *announcer
	f      *front
	runCtx context.Context // RunServer's: a move ends with it
	// fatal (1-buffered) receives the error of a move that left the
	// server without a span; RunServer then announces DOWN.
	fatal chan error

	mu sync.Mutex
	// Guarded by mu.
	busyLocked   bool
	closedLocked bool
	moves        sync.WaitGroup
}

var _ Mover = (*mover)(nil)

// Move implements Mover.
func (m *mover) Move(ctx context.Context, target swarm.Span) error {
	if err := target.Validate(m.j.model.NBlocks); err != nil {
		return fmt.Errorf("%w: target %s: %w", ErrMove, target, err)
	}
	m.mu.Lock()
	switch {
	case m.closedLocked:
		m.mu.Unlock()
		return fmt.Errorf("%w: the server stopped", ErrMove)
	case m.busyLocked:
		m.mu.Unlock()
		return fmt.Errorf("%w: another move is running", ErrMove)
	}
	m.busyLocked = true
	m.moves.Add(1)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.busyLocked = false
		m.mu.Unlock()
		m.moves.Done()
	}()
	old := m.a.current()
	from := old.srv.Info().Span
	if from == target {
		return nil
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.runCtx, cancel)()

	ev := MoveEvent{From: from, To: target}
	err := m.makeBeforeBreak(mctx, old, ev)
	if errors.Is(err, errNoRoom) {
		ev.DrainFirst = true
		m.j.log.Info("moving span: memory cannot hold both spans, draining first", "from", from.String(), "to", target.String(), "why", err)
		err = m.drainFirst(mctx, old, ev)
	}
	if err != nil {
		ev.Step, ev.Err = MoveFailed, err
		m.report(ev)
		return fmt.Errorf("%w: %s to %s: %w", ErrMove, from, target, err)
	}
	ev.Step = MoveDone
	m.report(ev)
	m.j.log.Info("moved span", "from", from.String(), "to", target.String(), "drain_first", ev.DrainFirst)
	return nil
}

// close refuses later moves and waits for the one running (RunServer's
// ctx has ended: it stops soon).
func (m *mover) close() {
	m.mu.Lock()
	m.closedLocked = true
	m.mu.Unlock()
	m.moves.Wait()
}

// report tells ServerConfig.OnMove.
func (m *mover) report(ev MoveEvent) {
	if m.j.cfg.OnMove != nil {
		m.j.cfg.OnMove(ev)
	}
}

// errNoRoom: the memory cannot hold both spans; drain first.
var errNoRoom = errors.New("no room for both spans")

// targetConfig is the server configuration of the target span: the
// memory M_j the old server runs with (its --memory, or the default it
// computed), so that a move never grows the process, and its measurement
// (tau_j and tauI_j are per block; re-measuring would change the fleet the
// planner sees after every move, and a fleet that changes under its plan
// never settles on it).
func (m *mover) targetConfig(old *server.Server, target swarm.Span) server.Config {
	cfg := m.j.cfg.Server
	cfg.Blocks = target
	cfg.MemoryBytes = old.Info().Admission.MemoryBytes
	t := old.Timing() // tau_j per block: the fleet replanning sees stays the same
	cfg.Timing = &t
	return cfg
}

// makeBeforeBreak moves with both spans loaded, or returns errNoRoom
// having changed nothing.
func (m *mover) makeBeforeBreak(ctx context.Context, old hosted, ev MoveEvent) error {
	adm := old.srv.Info().Admission
	oldWeights := adm.WeightBytes
	// s_m of the loaded engine (its dtype), rounded up.
	perBlock := (oldWeights + int64(ev.From.Len()) - 1) / int64(ev.From.Len())
	newWeights := perBlock * int64(ev.To.Len())
	// The old server admits nothing into the room of the new weights:
	// old weights + old caches + new weights <= M.
	if err := old.srv.ReserveMemory(newWeights); err != nil {
		return fmt.Errorf("%w: %w", errNoRoom, err)
	}
	next := hosted{}
	rollback := func(cause error) error {
		err := errors.Join(old.srv.ReserveMemory(0), m.a.announce(hosted{}, movePhase{}), next.ws.stop())
		if next.srv != nil {
			err = errors.Join(err, next.srv.Close())
		}
		if err != nil {
			return errors.Join(cause, fmt.Errorf("roll back: %w", err))
		}
		return cause
	}
	if err := m.a.announce(hosted{}, movePhase{movingTo: ev.To}); err != nil {
		return rollback(err)
	}
	ev.Step = MoveStarted
	m.report(ev)
	if old.ws != nil {
		// The new span gets its own URL: sessions failing over from the
		// old one leave the old URL out.
		ws, err := listenWebsocket(old.ws.moveAddr(), m.j.cfg.Announce, true, m.f, m.j.log, m.fatal)
		if err != nil {
			return rollback(err)
		}
		next.ws = ws
	}
	srv, err := m.j.load(ctx, m.targetConfig(old.srv, ev.To), next.url())
	if err != nil {
		return rollback(err)
	}
	next.srv = srv
	// Until the old server is closed, the new one admits only into what
	// the old one cannot hold. While the old one still admits, it may
	// hold up to M - new weights: reserve all of that (the new server
	// admits nothing); after the switch, only the old weights and the
	// caches its sessions still hold.
	if err := srv.ReserveMemory(adm.MemoryBytes - newWeights); err != nil {
		return rollback(err)
	}
	if err := ctx.Err(); err != nil {
		return rollback(err)
	}
	// Switch: connections and streams from now on reach the new server
	// (on either URL); those open stay with the old one, which stops
	// admitting.
	m.f.set(srv)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		old.srv.Shutdown(ctx) // ctx ending cuts the drain short
	}()
	<-old.srv.Draining()
	// The new server may use what the old one no longer holds: all but
	// its weights and the caches of its open sessions.
	lower := func() {
		held := old.srv.Info().Admission.CacheBytesUsed
		if err := srv.ReserveMemory(oldWeights + held); err != nil {
			m.j.log.Warn("moving span: lowering the reservation failed", "err", err)
		}
	}
	lower()
	if err := m.a.announce(next, movePhase{draining: ev.From}); err != nil {
		m.j.log.Warn("announcing the moved span failed", "err", err)
	}
	ev.Step = MoveSwitched
	m.report(ev)
	m.j.log.Info("moved span: serving the new one, draining the old one", "from", ev.From.String(), "to", ev.To.String(), "url", next.url())
	for done := false; !done; {
		select {
		case <-old.srv.LoadChanged():
			lower()
		case <-drained:
			done = true
		}
	}
	err = errors.Join(old.ws.stop(), old.srv.Close(), srv.ReserveMemory(0), m.a.announce(hosted{}, movePhase{}))
	if err != nil {
		m.j.log.Warn("moving span: closing the old span", "err", err)
	}
	return nil
}

// drainFirst moves with one span loaded at a time, on the same websocket
// listener.
func (m *mover) drainFirst(ctx context.Context, old hosted, ev MoveEvent) error {
	if err := m.a.announce(hosted{}, movePhase{join: true, span: ev.To, draining: ev.From}); err != nil {
		return err
	}
	ev.Step = MoveStarted
	m.report(ev)
	old.srv.Shutdown(ctx) // sessions end, the drain timeout passes, or ctx ends
	cfg := m.targetConfig(old.srv, ev.To)
	if err := old.srv.Close(); err != nil {
		m.j.log.Warn("moving span: closing the old span", "err", err)
	}
	if err := m.a.announce(hosted{}, movePhase{join: true, span: ev.To}); err != nil {
		m.j.log.Warn("announcing JOIN for the moved span failed", "err", err)
	}
	srv, err := m.j.load(m.runCtx, cfg, old.url())
	if err != nil {
		if m.runCtx.Err() == nil {
			m.mu.Lock()
			m.closedLocked = true // nothing left to move
			m.mu.Unlock()
			select {
			case m.fatal <- fmt.Errorf("%w: %s to %s: the old span is closed and the new one failed to load: %w", ErrMove, ev.From, ev.To, err):
			default: // serving stops anyway
			}
		}
		return err
	}
	m.f.set(srv)
	if err := m.a.announce(hosted{srv: srv, ws: old.ws}, movePhase{}); err != nil {
		m.j.log.Warn("announcing the moved span failed", "err", err)
	}
	ev.Step = MoveSwitched
	m.report(ev)
	return nil
}
