package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// hopConn is one open session at one server: a frame connection, a reader
// goroutine that hands frames over, and the session id the server granted.
type hopConn struct {
	ep      api.Endpoint
	fc      api.FrameConn
	sid     string
	dtype   swarm.DType
	frames  chan wire.Frame // from the reader; closed when it stops
	readErr error           // why the reader stopped; read after frames closes
	quit    chan struct{}   // closed to stop the reader
	done    chan struct{}   // closed when the reader has stopped
	once    sync.Once       // closes quit
	health  HealthSource    // nil: the source reports no health
	// inflight is the last step sent (step's caller only).
	inflight inflight
}

// openHop dials ep and opens a session processing span for up to
// maxLength tokens, waiting (with Waiting frames reported to onWait) up to
// the alloc timeout for the server's admission.
func openHop(ctx context.Context, cfg *config, ep api.Endpoint, model string, span swarm.Span, maxLength, dModel int) (*hopConn, error) {
	timeout := cfg.allocTimeout + cfg.stepTimeout
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fc, err := cfg.dial(dctx, ep, wire.MaxStepPayload(maxLength, dModel))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	h := &hopConn{
		ep: ep, fc: fc, dtype: cfg.wireDType,
		frames: make(chan wire.Frame, 16), quit: make(chan struct{}), done: make(chan struct{}),
	}
	h.health, _ = cfg.source.(HealthSource)
	go h.read()
	open := &wire.Open{Model: model, Span: span, MaxLength: maxLength, DType: cfg.wireDType, AllocTimeout: cfg.allocTimeout.Seconds()}
	if err := fc.WriteFrame(open); err != nil {
		h.abort()
		return nil, fmt.Errorf("client: open at %s: %w", ep.Inference, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-h.frames:
			if !ok {
				h.abort()
				return nil, fmt.Errorf("client: open at %s: %w", ep.Inference, h.readErr)
			}
			switch f := f.(type) {
			case *wire.Waiting:
				cfg.log.Info("server queues the session for cache room", "server", ep.Inference, "span", span.String(),
					"position", f.Position, "queue", f.QueueLen, "estimated_wait", f.EstimatedWait)
				if cfg.onWait != nil {
					cfg.onWait(WaitEvent{Server: ep.Inference, Span: span, Position: f.Position, QueueLen: f.QueueLen,
						EstimatedWait: seconds(f.EstimatedWait)})
				}
			case *wire.Granted:
				if f.DType != cfg.wireDType {
					h.abort()
					return nil, fmt.Errorf("%w: %s granted dtype %s, asked %s", ErrProtocol, ep.Inference, f.DType, cfg.wireDType)
				}
				h.sid = f.SessionID
				return h, nil
			case *wire.Error:
				h.abort()
				return nil, fmt.Errorf("client: open blocks %s at %s: %w", span, ep.Inference, f)
			default:
				h.abort()
				return nil, fmt.Errorf("%w: %s answered Open with %s", ErrProtocol, ep.Inference, f.Type())
			}
		case <-timer.C:
			h.abort()
			return nil, fmt.Errorf("%w: %s did not grant the session within %v", ErrStepTimeout, ep.Inference, timeout)
		case <-ctx.Done():
			h.abort()
			return nil, fmt.Errorf("client: open at %s: %w", ep.Inference, ctx.Err())
		}
	}
}

// read hands frames to h.frames until the connection ends or quit closes.
func (h *hopConn) read() {
	defer close(h.done)
	defer close(h.frames)
	for {
		f, err := h.fc.ReadFrame()
		if err != nil {
			h.readErr = err
			return
		}
		select {
		case h.frames <- f:
		case <-h.quit:
			h.readErr = api.ErrClosed
			return
		}
	}
}

// stepResult is a Result with the client-side timings.
type stepResult struct {
	hidden  []float32
	compute time.Duration // server-reported compute
	rtt     time.Duration // round trip minus compute: t_cj (eq. 1)
}

// step sends hidden states [n, d] at position pos and waits up to timeout
// for their Result (await). An ErrUnhealthy error leaves the step in
// flight: resume waits for its result.
func (h *hopConn) step(ctx context.Context, pos int, x []float32, n, d int, timeout time.Duration) (stepResult, error) {
	start := time.Now()
	st := &wire.Step{SessionID: h.sid, Position: pos, Hidden: wire.Hidden{DType: h.dtype, NTokens: n, DModel: d, Data: x}}
	if err := h.fc.WriteFrame(st); err != nil {
		if errors.Is(err, api.ErrClosed) {
			if e := h.lastWords(); e != nil {
				return stepResult{}, fmt.Errorf("client: step at %s: %w", h.ep.Inference, e)
			}
		}
		return stepResult{}, fmt.Errorf("client: step at %s: %w", h.ep.Inference, err)
	}
	h.inflight = inflight{start: start, deadline: start.Add(timeout), timeout: timeout, pos: pos, n: n, d: d}
	return h.await(ctx, true)
}

// inflight is the step a hop waits for.
type inflight struct {
	start, deadline time.Time
	timeout         time.Duration
	pos, n, d       int
}

// resume waits again for the step in flight after await returned
// ErrUnhealthy, ignoring the source's health from now on (the session found
// no other server to take the hop's blocks), until the step's deadline.
func (h *hopConn) resume(ctx context.Context) (stepResult, error) { return h.await(ctx, false) }

// await waits for the Result of the step in flight until its deadline;
// with watchHealth, it gives up (ErrUnhealthy) as soon as the HealthSource
// reports the server unhealthy.
func (h *hopConn) await(ctx context.Context, watchHealth bool) (stepResult, error) {
	in := h.inflight
	start, pos, n, d, timeout := in.start, in.pos, in.n, in.d, in.timeout
	timer := time.NewTimer(time.Until(in.deadline))
	defer timer.Stop()
	var changed <-chan struct{} // nil without a HealthSource: never ready
	if h.health != nil && watchHealth {
		changed = h.health.Changed()
		if err := h.health.Health(h.ep); err != nil {
			return stepResult{}, fmt.Errorf("%w: %s: %w", ErrUnhealthy, h.ep.Inference, err)
		}
	}
	for {
		select {
		case <-changed:
			changed = h.health.Changed()
			if err := h.health.Health(h.ep); err != nil {
				return stepResult{}, fmt.Errorf("%w: %s, waiting for the result of position %d: %w", ErrUnhealthy, h.ep.Inference, pos, err)
			}
		case f, ok := <-h.frames:
			if !ok {
				return stepResult{}, fmt.Errorf("client: step at %s: %w", h.ep.Inference, h.readErr)
			}
			switch f := f.(type) {
			case *wire.Result:
				if f.SessionID != h.sid || f.Position != pos || f.Hidden.NTokens != n || f.Hidden.DModel != d {
					return stepResult{}, fmt.Errorf("%w: %s answered step (session %q, position %d, [%d, %d]) with result (session %q, position %d, [%d, %d])",
						ErrProtocol, h.ep.Inference, h.sid, pos, n, d, f.SessionID, f.Position, f.Hidden.NTokens, f.Hidden.DModel)
				}
				if i := wire.FirstNonFinite(f.Hidden.Data); i >= 0 {
					return stepResult{}, fmt.Errorf("%w: %s returned %g at token %d, column %d of position %d", ErrBadOutput, h.ep.Inference, f.Hidden.Data[i], i/d, i%d, pos)
				}
				elapsed := time.Since(start)
				compute := seconds(f.Compute)
				return stepResult{hidden: f.Hidden.Data, compute: compute, rtt: max(elapsed-compute, 0)}, nil
			case *wire.Error:
				return stepResult{}, fmt.Errorf("client: step at %s: %w", h.ep.Inference, f)
			case *wire.Waiting:
				// A late status of the Open's wait: harmless.
			default:
				return stepResult{}, fmt.Errorf("%w: %s answered Step with %s", ErrProtocol, h.ep.Inference, f.Type())
			}
		case <-timer.C:
			return stepResult{}, fmt.Errorf("%w: %s gave no result for position %d within %v", ErrStepTimeout, h.ep.Inference, pos, timeout)
		case <-ctx.Done():
			return stepResult{}, fmt.Errorf("client: step at %s: %w", h.ep.Inference, ctx.Err())
		}
	}
}

// lastWords returns the Error frame the server sent before the connection
// broke (e.g. ShuttingDown), if it arrived. It closes the broken connection,
// which unblocks the reader, and takes every frame the reader still hands
// over: one that arrived just before the break may still be on its way
// through the reader when the write fails.
func (h *hopConn) lastWords() *wire.Error {
	h.fc.Close()
	var first *wire.Error
	for f := range h.frames {
		if e, isErr := f.(*wire.Error); isErr && first == nil {
			first = e
		}
	}
	return first
}

// close ends the session politely (Close, then Closed within timeout) and
// closes the connection.
func (h *hopConn) close(timeout time.Duration) error {
	defer h.abort()
	if err := h.fc.WriteFrame(&wire.Close{SessionID: h.sid}); err != nil {
		return fmt.Errorf("client: close at %s: %w", h.ep.Inference, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-h.frames:
			if !ok {
				return fmt.Errorf("client: close at %s: %w", h.ep.Inference, h.readErr)
			}
			switch f := f.(type) {
			case *wire.Closed:
				return nil
			case *wire.Error:
				return fmt.Errorf("client: close at %s: %w", h.ep.Inference, f)
			}
		case <-timer.C:
			return fmt.Errorf("%w: %s did not confirm Close within %v", ErrStepTimeout, h.ep.Inference, timeout)
		}
	}
}

// abort closes the connection at once and waits for the reader. It is
// idempotent.
func (h *hopConn) abort() {
	h.once.Do(func() { close(h.quit) })
	h.fc.Close()
	<-h.done
}

// failoverWorthy reports whether a hop's error means "use another server":
// the connection broke, the step timed out, or the server reported that it
// is shutting down, lost or expired the session, holds too many sessions of
// this client, or failed internally, or the source reports it unhealthy. Errors about the
// request itself (position, shape, dtype) are bugs and end the session.
func failoverWorthy(err error) bool {
	var we *wire.Error
	if errors.As(err, &we) {
		switch we.Code {
		case wire.CodeShuttingDown, wire.CodeUnknownSession, wire.CodeInternal, wire.CodeTimeout, wire.CodeNoRoom, wire.CodeBadFrame,
			wire.CodeSessionExpired, wire.CodeTooManySessions:
			return true
		}
		return false
	}
	return errors.Is(err, api.ErrClosed) || errors.Is(err, ErrStepTimeout) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrBadOutput) ||
		errors.Is(err, ErrUnhealthy)
}

// errUnreachable marks a hop whose server could not be dialled (a refused
// or timed-out connection: a dead or unreachable server).
var errUnreachable = errors.New("client: server unreachable")

// banWorthy reports whether a hop's error should ban its server (Bans): it
// could not be dialled, failed or did not answer, as opposed to being full
// (NoRoom, alloc Timeout, TooManySessions) or having expired an idle
// session.
func banWorthy(err error) bool {
	if errors.Is(err, errUnreachable) {
		return true
	}
	var we *wire.Error
	if errors.As(err, &we) {
		switch we.Code {
		case wire.CodeNoRoom, wire.CodeTimeout, wire.CodeTooManySessions, wire.CodeSessionExpired:
			return false
		}
	}
	return failoverWorthy(err)
}

// expired reports whether err is the server closing an idle session
// (CodeSessionExpired): the server is healthy and may host the replacement.
func expired(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == wire.CodeSessionExpired
}

// seconds converts a wire time in seconds (finite, >= 0: the decoder checks)
// to a Duration, saturating instead of overflowing.
func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}
