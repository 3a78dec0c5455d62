package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/server/admission"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// maxQueuedSteps bounds the steps a client may have in flight on one
// session; a normal client waits for each Result before the next Step.
const maxQueuedSteps = 64

// session is one admitted session: its attention caches (a blocks.Session
// over the sub-span to process), its admission grant, and a worker that
// runs its steps in order.
type session struct {
	c         *conn
	id        string
	dtype     swarm.DType
	span      swarm.Span
	maxLength int
	es        blocks.Session
	grant     *admission.Grant
	kick      chan struct{} // 1-buffered: the queue changed
	// releasePeer gives the session's slot of the per-peer cap back.
	releasePeer func()

	mu sync.Mutex
	// Guarded by mu.
	queueLocked   []*wire.Step
	closingLocked bool
	// trackedLocked: the close is counted in c.closings, to be marked done
	// when the worker ends.
	trackedLocked bool
	// expiredLocked: the idle timeout closed the session; no step is
	// queued any more.
	expiredLocked bool

	// Worker-only state.
	lastStep time.Time
	interval float64 // moving average of the time between steps, seconds
}

func newSession(c *conn, id string, o *wire.Open, es blocks.Session, g *admission.Grant, releasePeer func()) *session {
	return &session{
		c: c, id: id, dtype: o.DType, span: o.Span, maxLength: o.MaxLength,
		es: es, grant: g, kick: make(chan struct{}, 1), releasePeer: releasePeer,
	}
}

// enqueue hands a step to the worker.
func (s *session) enqueue(st *wire.Step) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expiredLocked {
		return fmt.Errorf("%w: session %q was idle longer than %v and is closed; open a new one", errExpired, s.id, s.c.s.cfg.SessionIdleTimeout)
	}
	if len(s.queueLocked) >= maxQueuedSteps {
		return fmt.Errorf("%w: %d steps of session %q are already waiting for their results", errOverload, len(s.queueLocked), s.id)
	}
	s.queueLocked = append(s.queueLocked, st)
	s.signal()
	return nil
}

// requestClose makes the worker close the session after its queued steps;
// tracked says the close is counted in the connection's closings.
func (s *session) requestClose(tracked bool) {
	s.mu.Lock()
	s.closingLocked = true
	s.trackedLocked = tracked
	s.mu.Unlock()
	s.signal()
}

func (s *session) signal() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// next pops the next queued step; closing reports a requested close once
// the queue is empty.
func (s *session) next() (st *wire.Step, closing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queueLocked) > 0 {
		st = s.queueLocked[0]
		s.queueLocked[0] = nil
		s.queueLocked = s.queueLocked[1:]
		return st, false
	}
	return nil, s.closingLocked
}

// run is the session's worker: it computes queued steps in order until the
// session is closed or the connection ends, then releases the caches and,
// for a Close, answers Closed (after the release, so that a client that sees
// Closed knows the room is free).
func (s *session) run() {
	defer func() {
		s.mu.Lock()
		tracked := s.trackedLocked
		s.mu.Unlock()
		if tracked {
			s.c.closings.Done()
		}
	}()
	idle := s.c.s.cfg.SessionIdleTimeout
	var timer *time.Timer
	var expire <-chan time.Time
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		expire = timer.C
	}
	for {
		select {
		case <-s.c.ctx.Done():
			s.release()
			return
		case <-expire:
			if s.expire() {
				return
			}
		case <-s.kick:
		}
		for {
			st, closing := s.next()
			if st != nil {
				s.forward(st)
				continue
			}
			if closing {
				s.c.releaseMu.Lock()
				s.release()
				s.c.log.Info("session closed", "session", s.id)
				s.c.send(&wire.Closed{SessionID: s.id})
				s.c.releaseMu.Unlock()
				return
			}
			break
		}
		if timer != nil {
			timer.Reset(idle) // idle from now: the queue is empty
		}
	}
}

// expire closes the session for the idle timeout unless a step or a Close
// arrived meanwhile (then it reports false and the worker goes on): it
// takes the session off the connection, releases its caches and tells the
// client CodeSessionExpired.
func (s *session) expire() bool {
	c := s.c
	c.mu.Lock()
	s.mu.Lock()
	busy := len(s.queueLocked) > 0 || s.closingLocked
	if !busy {
		s.expiredLocked = true
		if c.sessionsLocked[s.id] == s {
			delete(c.sessionsLocked, s.id)
		}
	}
	s.mu.Unlock()
	c.mu.Unlock()
	if busy {
		return false
	}
	c.releaseMu.Lock()
	defer c.releaseMu.Unlock()
	s.release()
	idle := c.s.cfg.SessionIdleTimeout
	c.log.Info("session expired: idle past the timeout", "session", s.id, "idle_timeout", idle)
	c.send(wire.NewError(s.id, wire.CodeSessionExpired,
		fmt.Errorf("%w: session %q had no step for %v and is closed; open a new one", errExpired, s.id, idle)))
	return true
}

// release frees the attention caches and the admission grant.
func (s *session) release() {
	s.es.Close()
	s.grant.Release()
	s.releasePeer()
	s.c.s.notifyLoad()
}

// forward runs one step through the session's blocks, in a batch with the
// steps of other sessions (Server.steps), and answers Result (or Error).
// The Result's Compute is the time from the step's start to its answer,
// waiting for the running batch included.
func (s *session) forward(st *wire.Step) {
	h := st.Hidden
	d := s.c.s.info.DModel
	switch {
	case h.DType != s.dtype:
		s.c.sendError(s.id, fmt.Errorf("%w: step in %s, the session was opened with %s", errDType, h.DType, s.dtype))
		return
	case h.DModel != d:
		s.c.sendError(s.id, fmt.Errorf("%w: hidden states [%d, %d], want [n, %d] (d_model)", errShape, h.NTokens, h.DModel, d))
		return
	}
	if i := wire.FirstNonFinite(h.Data); i >= 0 {
		s.c.s.nonFinite.Add(1)
		s.c.sendError(s.id, fmt.Errorf("%w: value %g at token %d, column %d", errNotFinite, h.Data[i], i/d, i%d))
		return
	}
	now := time.Now()
	out, err := s.c.s.steps.forward(s.c.ctx, s.es, st.Position, h.Data, h.NTokens)
	compute := time.Since(now)
	s.c.s.observeStep(compute)
	if err != nil {
		s.c.sendError(s.id, fmt.Errorf("server: step at position %d: %w", st.Position, err))
		return
	}
	s.updateRemaining(now, compute)
	s.c.send(&wire.Result{
		SessionID: s.id, Position: st.Position, Compute: compute.Seconds(),
		Hidden: wire.Hidden{DType: s.dtype, NTokens: h.NTokens, DModel: d, Data: out},
	})
}

// updateRemaining refreshes the session's estimated remaining time T_r of
// paper 003 eq. (20): the positions left times the average time between
// steps (which includes the client's and the other servers' time), at least
// this server's compute time for them (stepLowerBound).
func (s *session) updateRemaining(start time.Time, compute time.Duration) {
	if !s.lastStep.IsZero() {
		gap := start.Sub(s.lastStep).Seconds()
		if s.interval == 0 {
			s.interval = gap
		} else {
			s.interval = 0.8*s.interval + 0.2*gap
		}
	}
	s.lastStep = start
	left := float64(s.maxLength - s.es.Len())
	t := s.c.s.timing
	perStep := stepLowerBound(max(s.interval, compute.Seconds()), s.span.Len(), t.Tau, t.TauBatch, s.c.s.adm.OpenSessions())
	s.grant.SetRemaining(left * perStep)
}

// stepLowerBound is the time one decode step of a session takes at the
// least, seconds: the observed time (the mean interval between its steps
// or this step's compute), but no less than its k blocks at tau_j scaled by
// the batch curve for the open sessions stepped together
// (k * tau * swarm.BatchFactor(batch, open)).
func stepLowerBound(observed float64, k int, tau float64, batch []swarm.BatchTau, open int) float64 {
	return max(observed, float64(k)*tau*swarm.BatchFactor(batch, open))
}
