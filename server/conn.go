package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server/admission"
	"github.com/swarmllm/swarm/swarm/wire"
)

// conn is one client connection. Its read loop only dispatches: an Open
// waits for admission in its own goroutine and each session computes in its
// own worker, so a slow or waiting session never holds up another's frames.
type conn struct {
	s      *Server
	fc     api.FrameConn
	log    *slog.Logger
	peer   string          // peerKey of the remote address
	ctx    context.Context // ends with the connection
	cancel context.CancelFunc
	wg     sync.WaitGroup // Open handlers and session workers
	opens  sync.WaitGroup // Open handlers; Add only under mu while !abortingLocked
	// closings counts Close requests whose Closed frame is not sent yet;
	// Add only under mu while !abortingLocked.
	closings sync.WaitGroup
	// releaseMu orders the frames a release causes on this connection: a
	// Close holds it from releasing its caches until its Closed frame is
	// written, and a waiting Open takes it to answer Granted, so a session
	// queued behind one of the same connection is granted after that one's
	// Closed, never before (the room is free for other connections as soon
	// as it is released).
	releaseMu sync.Mutex

	mu sync.Mutex
	// sessionsLocked maps session ids to sessions; a nil value reserves
	// the id of an Open still waiting for admission. Guarded by mu.
	sessionsLocked map[string]*session
	// abortingLocked is set by abort: no new Open handler starts. Guarded
	// by mu.
	abortingLocked bool
}

func newConn(s *Server, fc api.FrameConn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		s: s, fc: fc, ctx: ctx, cancel: cancel, peer: peerKey(fc.RemoteAddr()),
		log:            s.log.With("remote", fc.RemoteAddr()),
		sessionsLocked: map[string]*session{},
	}
}

// serve runs the read loop until the connection ends, then closes it,
// waits for its goroutines and so releases its sessions' caches.
func (c *conn) serve() {
	c.log.Debug("connection open")
	defer func() {
		c.cancel()
		c.fc.Close()
		c.wg.Wait()
		c.log.Debug("connection closed")
	}()
	for {
		f, err := c.fc.ReadFrame()
		if err != nil {
			if errors.Is(err, wire.ErrBadFrame) || errors.Is(err, wire.ErrVersion) {
				c.log.Warn("malformed frame: closing the connection", "err", err)
				c.send(wire.NewError("", wire.CodeOf(err), err))
			}
			return
		}
		c.s.observeFrame("in", f)
		switch f := f.(type) {
		case *wire.Open:
			c.mu.Lock()
			aborting := c.abortingLocked
			if !aborting {
				c.opens.Add(1)
			}
			c.mu.Unlock()
			if aborting {
				c.sendError(f.SessionID, fmt.Errorf("%w: not admitting new sessions", errDraining))
				continue
			}
			c.wg.Go(func() {
				defer c.opens.Done()
				c.open(f)
			})
		case *wire.Step:
			c.step(f)
		case *wire.Close:
			c.closeSession(f)
		default:
			err := fmt.Errorf("%w: a client sends Open, Step or Close, not %s", wire.ErrBadFrame, f.Type())
			c.log.Warn("unexpected frame: closing the connection", "err", err)
			c.send(wire.NewError("", wire.CodeBadFrame, err))
			return
		}
	}
}

// send writes f after the emulated latency; it gives up when the
// connection ends first. A failed write ends the connection.
func (c *conn) send(f wire.Frame) {
	if !wait(c.ctx, c.s.cfg.EmulateLatency) {
		return
	}
	c.sendNow(f)
}

// sendNow writes f without the emulated latency.
func (c *conn) sendNow(f wire.Frame) {
	c.s.observeSending(f)
	if err := c.fc.WriteFrame(f); err != nil {
		c.log.Debug("write failed: closing the connection", "frame", f.Type().String(), "err", err)
		c.cancel()
		c.fc.Close()
		return
	}
	c.s.observeFrame("out", f)
}

// sendError answers a request about session sid with an Error frame whose
// code errorCode derives from err.
func (c *conn) sendError(sid string, err error) {
	c.send(wire.NewError(sid, errorCode(err), err))
}

// open admits a session: checks, waits for cache room (sending Waiting
// frames), allocates the attention caches and answers Granted.
func (c *conn) open(o *wire.Open) {
	s := c.s
	sid := o.SessionID
	if sid == "" {
		sid = newSessionID()
	}
	switch {
	case s.isDraining():
		c.sendError(sid, fmt.Errorf("%w: not admitting new sessions", errDraining))
		return
	case o.Model != s.info.Name:
		c.sendError(sid, fmt.Errorf("%w: this server hosts %q, not %q", errWrongModel, s.info.Name, o.Model))
		return
	case !s.cfg.Blocks.ContainsSpan(o.Span):
		c.sendError(sid, fmt.Errorf("%w: span %s is not inside the hosted span %s", errBadSpan, o.Span, s.cfg.Blocks))
		return
	case o.MaxLength > s.maxLength:
		c.sendError(sid, fmt.Errorf("%w: max_length %d exceeds the model's context of %d tokens", errTooLong, o.MaxLength, s.maxLength))
		return
	}
	c.mu.Lock()
	if _, dup := c.sessionsLocked[sid]; dup {
		c.mu.Unlock()
		c.sendError(sid, fmt.Errorf("%w: session id %q is already in use on this connection", errDuplicate, sid))
		return
	}
	if limit := s.cfg.MaxSessionsPerConn; limit > 0 && len(c.sessionsLocked) >= limit {
		c.mu.Unlock()
		c.sendError(sid, fmt.Errorf("%w: this connection already holds %d sessions, the most this server allows one connection (--max-sessions-per-conn)", errTooMany, limit))
		return
	}
	releasePeer, err := s.peers.acquire(c.peer)
	if err != nil {
		c.mu.Unlock()
		c.log.Info("session refused", "session", sid, "err", err)
		c.sendError(sid, err)
		return
	}
	c.sessionsLocked[sid] = nil // reserved while waiting
	c.mu.Unlock()
	registered := false
	defer func() {
		if !registered {
			c.mu.Lock()
			delete(c.sessionsLocked, sid)
			c.mu.Unlock()
			releasePeer()
		}
	}()

	k := o.Span.Len()
	g, err := s.adm.Acquire(c.ctx, admission.Request{
		SessionID:    sid,
		Span:         o.Span,
		MaxLength:    o.MaxLength,
		AllocTimeout: admission.DurationFromSeconds(o.AllocTimeout),
		Remaining:    float64(o.MaxLength*k) * s.timing.Tau,
		OnWait: func(w admission.WaitStatus) {
			c.log.Debug("session waits for cache room", "session", sid, "position", w.Position, "queue", w.QueueLen, "estimated_wait", w.EstimatedWait)
			c.send(&wire.Waiting{SessionID: sid, Position: w.Position, QueueLen: w.QueueLen, EstimatedWait: max(w.EstimatedWait, 0)})
		},
	})
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Info("session refused", "session", sid, "span", o.Span.String(), "max_length", o.MaxLength, "err", err)
			c.sendError(sid, err)
		}
		return
	}
	es, err := s.engine.NewSession(o.Span, o.MaxLength)
	if err != nil {
		g.Release()
		c.sendError(sid, fmt.Errorf("server: allocate the attention caches: %w", err))
		return
	}
	sess := newSession(c, sid, o, es, g, releasePeer)
	c.mu.Lock()
	c.sessionsLocked[sid] = sess
	registered = true
	c.mu.Unlock()
	c.wg.Go(sess.run)
	s.notifyLoad()
	c.log.Info("session open", "session", sid, "span", o.Span.String(), "max_length", o.MaxLength,
		"dtype", o.DType.String(), "cache_bytes", g.CacheBytes(), "waited", g.Waited())
	c.releaseMu.Lock()
	defer c.releaseMu.Unlock()
	c.send(&wire.Granted{SessionID: sid, DType: o.DType, CacheBytes: g.CacheBytes(), Waited: g.Waited().Seconds()})
}

// lookup returns the open session sid, or nil.
func (c *conn) lookup(sid string) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionsLocked[sid]
}

// step queues a Step for its session's worker.
func (c *conn) step(st *wire.Step) {
	sess := c.lookup(st.SessionID)
	if sess == nil {
		c.sendError(st.SessionID, fmt.Errorf("%w: no open session %q on this connection", errUnknownSession, st.SessionID))
		return
	}
	if err := sess.enqueue(st); err != nil {
		c.sendError(st.SessionID, err)
	}
}

// closeSession ends a session after its queued steps; the worker answers
// Closed once the caches are released.
func (c *conn) closeSession(cl *wire.Close) {
	c.mu.Lock()
	sess := c.sessionsLocked[cl.SessionID]
	tracked := false
	if sess != nil {
		delete(c.sessionsLocked, cl.SessionID)
		if !c.abortingLocked {
			c.closings.Add(1)
			tracked = true
		}
	}
	c.mu.Unlock()
	if sess == nil {
		c.sendError(cl.SessionID, fmt.Errorf("%w: no open session %q on this connection", errUnknownSession, cl.SessionID))
		return
	}
	sess.requestClose(tracked)
}

// abort tells every open session of the connection that the server is
// shutting down (so that clients fail over) and closes the connection. It
// first lets the Open handlers in flight answer (the admission controller
// is closed by then, so they end promptly) and the closing sessions send
// their Closed frames, so that the client hears about every session it
// knows of before the connection closes.
func (c *conn) abort(err error) {
	c.mu.Lock()
	c.abortingLocked = true
	c.mu.Unlock()
	c.opens.Wait()
	c.closings.Wait()
	c.mu.Lock()
	var ids []string
	for id, sess := range c.sessionsLocked {
		if sess != nil {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.sendNow(wire.NewError(id, wire.CodeShuttingDown, err))
	}
	c.cancel()
	c.fc.Close()
}

// newSessionID returns 16 random bytes in hex.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
