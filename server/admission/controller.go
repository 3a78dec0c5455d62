package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/swarmllm/swarm/swarm"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrNeverFits: the session needs more cache memory than the server has
	// even with no other session open (M - s_m*m). Waiting cannot help.
	ErrNeverFits = errors.New("admission: session can never fit")
	// ErrTimeout: the session waited its whole alloc_timeout without room.
	ErrTimeout = errors.New("admission: timed out waiting for room")
	// ErrClosed: the controller is closed (the server is shutting down).
	ErrClosed = errors.New("admission: closed")
	// ErrBadRequest: the request is malformed (span outside the hosted
	// span, max_length < 1, negative alloc_timeout). Span errors also wrap
	// swarm.ErrBadSpan.
	ErrBadRequest = errors.New("admission: bad request")
	// ErrBadConfig: the configuration is inconsistent.
	ErrBadConfig = errors.New("admission: bad config")
)

// Config describes the server's memory. It maps to the flags of
// `swarm serve`: --memory, --max-sessions, and the model and span served.
type Config struct {
	// Model gives s_c per block: Model.BlockCacheBytes(b, maxLength) bytes
	// per session (less for sliding-window blocks).
	Model swarm.ModelInfo
	// Span is the blocks the server hosts (m = Span.Len()); requests must
	// process a sub-span of it.
	Span swarm.Span
	// WeightBytes is s_m*m, the bytes of the hosted block weights. Zero means
	// Model.BlockBytes * Span.Len(); pass the engine's measured value when
	// there is one.
	WeightBytes int64
	// MemoryBytes is M, the memory for weights and attention caches in
	// bytes (--memory). It must be at least WeightBytes.
	MemoryBytes int64
	// MaxSessions caps the open sessions (--max-sessions); 0 means no cap.
	MaxSessions int
}

// weights returns s_m*m.
func (c Config) weights() int64 {
	if c.WeightBytes > 0 {
		return c.WeightBytes
	}
	return c.Model.BlockBytes * int64(c.Span.Len())
}

// Validate checks the configuration and returns an error wrapping
// ErrBadConfig naming the first problem.
func (c Config) Validate() error {
	switch {
	case c.Model.CacheBytesPerToken <= 0:
		return fmt.Errorf("%w: model %q has cache_bytes_per_token %d, want > 0", ErrBadConfig, c.Model.Name, c.Model.CacheBytesPerToken)
	case c.WeightBytes < 0:
		return fmt.Errorf("%w: weight bytes %d, want >= 0", ErrBadConfig, c.WeightBytes)
	case c.MaxSessions < 0:
		return fmt.Errorf("%w: max sessions %d, want >= 0 (0 = no cap)", ErrBadConfig, c.MaxSessions)
	case c.MemoryBytes <= 0:
		return fmt.Errorf("%w: memory %d bytes, want > 0", ErrBadConfig, c.MemoryBytes)
	}
	if err := c.Span.Validate(c.Model.NBlocks); err != nil {
		return fmt.Errorf("%w: hosted span: %w", ErrBadConfig, err)
	}
	if w := c.weights(); w > c.MemoryBytes {
		return fmt.Errorf("%w: the %d blocks of span %s need %d bytes (s_m*m) but memory is %d bytes",
			ErrBadConfig, c.Span.Len(), c.Span, w, c.MemoryBytes)
	}
	return nil
}

// Request asks for the attention caches of one session.
type Request struct {
	// SessionID names the session in snapshots; it need not be unique.
	SessionID string
	// Span is the blocks the server processes for the session (k_r =
	// Span.Len()); it must lie inside Config.Span.
	Span swarm.Span
	// MaxLength is the most tokens the session holds (lI_max + l_max), which
	// sizes its caches: Model.SpanCacheBytes(Span, MaxLength) bytes.
	MaxLength int
	// AllocTimeout is the longest the request waits for room; 0 fails at once
	// with ErrTimeout when there is no room now.
	AllocTimeout time.Duration
	// Remaining is the estimated duration of the session in seconds, the
	// initial T_r of paper 003 eq. (20); Grant.SetRemaining updates it. It
	// feeds the wait estimates of later sessions.
	Remaining float64
	// OnWait, if not nil, is called when the request is queued and again
	// whenever the queue moves while it waits, from Acquire's goroutine and
	// never with the controller's lock held. Calls are coalesced: a slow
	// callback sees the latest status, not every one.
	OnWait func(WaitStatus)
}

// WaitStatus is a queued request's view of the queue.
type WaitStatus struct {
	// Position is the number of requests queued ahead (0 = next).
	Position int
	// QueueLen is the number of requests queued, this one included.
	QueueLen int
	// EstimatedWait is the estimated time until admission, in seconds (see
	// EstimateWait); never negative, since every queued request fits on its
	// own once the sessions ahead of it end.
	EstimatedWait float64
}

// Controller admits sessions against the memory model (2). It is safe for
// concurrent use.
type Controller struct {
	cfg    Config
	budget int64 // M - s_m*m: bytes for attention caches

	mu sync.Mutex
	// The fields below are guarded by mu.
	usedLocked int64
	// reservedLocked is cache memory set aside by SetReserved.
	reservedLocked int64
	openLocked     map[*Grant]struct{}
	queueLocked    []*waiter
	closedLocked   bool

	// drained is closed (under mu) once the controller is closed and no
	// grant is open. Set in New and never reassigned, so it is read freely.
	drained chan struct{}
}

// waiter is a queued request.
type waiter struct {
	req     Request
	bytes   int64
	queued  time.Time
	ready   chan struct{} // closed once grant or err is set (under mu)
	changed chan struct{} // 1-buffered: the queue moved
	grant   *Grant
	err     error
}

// New returns a controller for cfg, or an error wrapping ErrBadConfig.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Controller{
		cfg:        cfg,
		budget:     cfg.MemoryBytes - cfg.weights(),
		openLocked: map[*Grant]struct{}{},
		drained:    make(chan struct{}),
	}, nil
}

// OpenSessions is the number of sessions admitted and not yet released.
func (c *Controller) OpenSessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.openLocked)
}

// CacheBudget is M - s_m*m, the bytes available to attention caches.
func (c *Controller) CacheBudget() int64 { return c.budget }

// Cost returns the attention-cache bytes req needs, k * s_c(max_length), or
// an error wrapping ErrBadRequest (and swarm.ErrBadSpan for a bad span).
func (c *Controller) Cost(req Request) (int64, error) {
	if err := req.Span.Validate(0); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if !c.cfg.Span.ContainsSpan(req.Span) {
		return 0, fmt.Errorf("%w: %w: span %s is not inside the hosted span %s", ErrBadRequest, swarm.ErrBadSpan, req.Span, c.cfg.Span)
	}
	if req.MaxLength < 1 {
		return 0, fmt.Errorf("%w: max_length %d, want >= 1", ErrBadRequest, req.MaxLength)
	}
	if req.AllocTimeout < 0 {
		return 0, fmt.Errorf("%w: alloc_timeout %v, want >= 0", ErrBadRequest, req.AllocTimeout)
	}
	return c.cfg.Model.SpanCacheBytes(req.Span, req.MaxLength), nil
}

// Acquire reserves the caches of req, waiting in FIFO order for up to
// req.AllocTimeout (and while ctx lives) when they do not fit now. A request
// never overtakes an earlier waiter.
//
// Errors: ErrBadRequest for a malformed request; ErrNeverFits at once when
// the caches exceed the whole cache budget; ErrTimeout when the wait runs
// out; ErrClosed once the controller is closed; ctx.Err() (wrapped) when ctx
// ends first. On error nothing is reserved.
func (c *Controller) Acquire(ctx context.Context, req Request) (*Grant, error) {
	bytes, err := c.Cost(req)
	if err != nil {
		return nil, err
	}
	if bytes > c.budget {
		return nil, fmt.Errorf("%w: %d blocks x %d tokens need %d cache bytes, but only %d of the %d bytes of memory are left after the %d bytes of block weights",
			ErrNeverFits, req.Span.Len(), req.MaxLength, bytes, c.budget, c.cfg.MemoryBytes, c.cfg.MemoryBytes-c.budget)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("admission: %w", err)
	}

	c.mu.Lock()
	if c.closedLocked {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: not admitting new sessions", ErrClosed)
	}
	now := time.Now()
	if len(c.queueLocked) == 0 && c.fitsLocked(bytes) {
		g := c.admitLocked(req, bytes, now, now)
		c.mu.Unlock()
		return g, nil
	}
	if req.AllocTimeout == 0 {
		status := c.statusLocked(len(c.queueLocked), bytes, req.Remaining)
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: no room now for %d cache bytes and alloc_timeout is 0 (estimated wait %.3gs)", ErrTimeout, bytes, status.EstimatedWait)
	}
	w := &waiter{req: req, bytes: bytes, queued: now, ready: make(chan struct{}), changed: make(chan struct{}, 1)}
	c.queueLocked = append(c.queueLocked, w)
	status := c.waiterStatusLocked(w)
	c.mu.Unlock()

	timer := time.NewTimer(req.AllocTimeout)
	defer timer.Stop()
	if req.OnWait != nil {
		req.OnWait(status)
	}
	for {
		select {
		case <-w.ready:
			return w.grant, w.err
		case <-w.changed:
			if req.OnWait == nil {
				continue
			}
			c.mu.Lock()
			status, queued := c.waiterStatusLocked(w), w.grant == nil && w.err == nil
			c.mu.Unlock()
			if queued {
				req.OnWait(status)
			}
		case <-ctx.Done():
			return c.abandon(w, false, fmt.Errorf("admission: gave up waiting for room: %w", ctx.Err()))
		case <-timer.C:
			return c.abandon(w, true, fmt.Errorf("%w: waited %v for %d cache bytes", ErrTimeout, req.AllocTimeout, bytes))
		}
	}
}

// abandon takes w out of the queue after a timeout or cancellation. If w was
// granted meanwhile, a timed-out request keeps its grant (the session is
// still wanted) and a cancelled one gives it back.
func (c *Controller) abandon(w *waiter, keepGrant bool, err error) (*Grant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-w.ready:
		if w.grant == nil {
			return nil, w.err
		}
		if keepGrant {
			return w.grant, nil
		}
		c.releaseLocked(w.grant)
		return nil, err
	default:
	}
	for i, q := range c.queueLocked {
		if q == w {
			c.queueLocked = append(c.queueLocked[:i], c.queueLocked[i+1:]...)
			break
		}
	}
	w.err = err
	close(w.ready)
	// The head may have changed, and those behind w moved up.
	c.dispatchLocked()
	c.notifyLocked()
	return nil, err
}

// fitsLocked reports whether bytes more fit in memory and the session cap.
func (c *Controller) fitsLocked(bytes int64) bool {
	return c.usedLocked+c.reservedLocked+bytes <= c.budget &&
		(c.cfg.MaxSessions == 0 || len(c.openLocked) < c.cfg.MaxSessions)
}

// admitLocked records an open session.
func (c *Controller) admitLocked(req Request, bytes int64, queued, now time.Time) *Grant {
	g := &Grant{c: c, req: req, bytes: bytes, waited: now.Sub(queued), remainingLocked: req.Remaining, setAtLocked: now, openedAt: now}
	c.usedLocked += bytes
	c.openLocked[g] = struct{}{}
	return g
}

// dispatchLocked admits waiters from the head of the queue while they fit.
func (c *Controller) dispatchLocked() {
	now := time.Now()
	moved := false
	for len(c.queueLocked) > 0 && c.fitsLocked(c.queueLocked[0].bytes) {
		w := c.queueLocked[0]
		c.queueLocked = c.queueLocked[1:]
		w.grant = c.admitLocked(w.req, w.bytes, w.queued, now)
		close(w.ready)
		moved = true
	}
	if moved {
		c.notifyLocked()
	}
}

// notifyLocked tells every waiter that the queue moved.
func (c *Controller) notifyLocked() {
	for _, w := range c.queueLocked {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}

// releaseLocked frees g's caches and admits whoever now fits.
func (c *Controller) releaseLocked(g *Grant) {
	if g.releasedLocked {
		return
	}
	g.releasedLocked = true
	c.usedLocked -= g.bytes
	delete(c.openLocked, g)
	c.dispatchLocked()
	c.notifyLocked()
	if c.closedLocked && len(c.openLocked) == 0 {
		closeOnce(c.drained)
	}
}

// Close stops admitting: queued requests fail with ErrClosed, later Acquire
// calls too. Open grants stay valid until released. Close is idempotent.
func (c *Controller) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closedLocked {
		return
	}
	c.closedLocked = true
	for _, w := range c.queueLocked {
		w.err = fmt.Errorf("%w: the server is shutting down", ErrClosed)
		close(w.ready)
	}
	c.queueLocked = nil
	if len(c.openLocked) == 0 {
		closeOnce(c.drained)
	}
}

// Drain closes the controller (see Close) and blocks until every open grant
// is released or ctx ends, for graceful shutdown. It returns ctx.Err()
// (wrapped) if ctx ends first.
func (c *Controller) Drain(ctx context.Context) error {
	c.Close()
	select {
	case <-c.drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("admission: drain: %w", ctx.Err())
	}
}

// DurationFromSeconds converts seconds (such as a wire Open's
// alloc_timeout) to a time.Duration, saturating at the largest Duration
// instead of overflowing; NaN and negative values give 0.
func DurationFromSeconds(s float64) time.Duration {
	switch {
	case !(s > 0):
		return 0
	case s >= float64(math.MaxInt64)/float64(time.Second):
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
