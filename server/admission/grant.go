package admission

import "time"

// Grant is an admitted session's reservation. Release it when the session
// ends. Its methods are safe for concurrent use.
type Grant struct {
	c        *Controller
	req      Request
	bytes    int64
	waited   time.Duration
	openedAt time.Time

	// Guarded by c.mu.
	remainingLocked float64   // seconds, as of setAtLocked
	setAtLocked     time.Time // when remainingLocked was set
	releasedLocked  bool
}

// Release frees the session's caches and admits waiters that now fit. It is
// idempotent.
func (g *Grant) Release() {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	g.c.releaseLocked(g)
}

// SetRemaining updates the estimated time until the session ends, in
// seconds from now (T_r of paper 003 eq. 20); the estimate then counts down
// with the clock. Negative or NaN values count as 0.
func (g *Grant) SetRemaining(seconds float64) {
	if !(seconds > 0) {
		seconds = 0
	}
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	g.remainingLocked = seconds
	g.setAtLocked = time.Now()
}

// CacheBytes is the attention-cache bytes reserved:
// Model.SpanCacheBytes(Span, MaxLength).
func (g *Grant) CacheBytes() int64 { return g.bytes }

// Waited is how long the request waited in the queue before admission.
func (g *Grant) Waited() time.Duration { return g.waited }

// Request returns the request the grant answers (OnWait included).
func (g *Grant) Request() Request { return g.req }

// remainingAtLocked returns the estimated remaining seconds at now.
func (g *Grant) remainingAtLocked(now time.Time) float64 {
	return max(g.remainingLocked-now.Sub(g.setAtLocked).Seconds(), 0)
}
