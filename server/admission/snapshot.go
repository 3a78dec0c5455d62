package admission

import (
	"cmp"
	"slices"
	"time"

	"github.com/swarmllm/swarm/swarm"
)

// OpenSession is one admitted session in a Snapshot.
type OpenSession struct {
	// SessionID is Request.SessionID.
	SessionID string `json:"session_id"`
	// Span is the blocks processed for it; Caches = Span.Len().
	Span swarm.Span `json:"span"`
	// MaxLength is the tokens its caches are sized for.
	MaxLength int `json:"max_length"`
	// CacheBytes is the attention-cache bytes it holds.
	CacheBytes int64 `json:"cache_bytes"`
	// Remaining is its estimated remaining time, in seconds.
	Remaining float64 `json:"remaining"`
	// Age is the time since admission, in seconds.
	Age float64 `json:"age"`
}

// QueuedSession is one waiting request in a Snapshot.
type QueuedSession struct {
	// SessionID is Request.SessionID.
	SessionID string `json:"session_id"`
	// Position is the number of requests ahead (0 = next).
	Position int `json:"position"`
	// Span is the blocks it asks to process.
	Span swarm.Span `json:"span"`
	// CacheBytes is the attention-cache bytes it needs.
	CacheBytes int64 `json:"cache_bytes"`
	// Waited is the time it has waited so far, in seconds.
	Waited float64 `json:"waited"`
	// EstimatedWait is the estimated time until admission, in seconds.
	EstimatedWait float64 `json:"estimated_wait"`
}

// Snapshot is the controller's state at one instant, what a server shows on
// GET /v1/info.
type Snapshot struct {
	// MemoryBytes is M (Config.MemoryBytes).
	MemoryBytes int64 `json:"memory_bytes"`
	// WeightBytes is s_m*m.
	WeightBytes int64 `json:"weight_bytes"`
	// CacheBytesUsed is the attention-cache bytes held by open sessions.
	CacheBytesUsed int64 `json:"cache_bytes_used"`
	// CacheBytesFree is M - s_m*m - CacheBytesUsed.
	CacheBytesFree int64 `json:"cache_bytes_free"`
	// MaxSessions is the cap on open sessions, 0 for none.
	MaxSessions int `json:"max_sessions"`
	// Closed is true once the controller stopped admitting.
	Closed bool `json:"closed"`
	// Open lists the open sessions by increasing Remaining (the order of
	// paper 003 eq. 20).
	Open []OpenSession `json:"open"`
	// Queue lists the waiting requests in FIFO order.
	Queue []QueuedSession `json:"queue"`
}

// Loads returns the open sessions as a server advertises them
// (swarm.ServerInfo.Sessions): remaining time and block caches held, the
// inputs of paper 003 eq. (20).
func (s Snapshot) Loads() []swarm.SessionLoad {
	loads := make([]swarm.SessionLoad, len(s.Open))
	for i, o := range s.Open {
		loads[i] = swarm.SessionLoad{Remaining: o.Remaining, Caches: o.Span.Len()}
	}
	return loads
}

// Snapshot returns the current state.
func (c *Controller) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	s := Snapshot{
		MemoryBytes:    c.cfg.MemoryBytes,
		WeightBytes:    c.cfg.MemoryBytes - c.budget,
		CacheBytesUsed: c.usedLocked,
		CacheBytesFree: c.budget - c.usedLocked,
		MaxSessions:    c.cfg.MaxSessions,
		Closed:         c.closedLocked,
		Open:           make([]OpenSession, 0, len(c.openLocked)),
		Queue:          make([]QueuedSession, 0, len(c.queueLocked)),
	}
	for g := range c.openLocked {
		s.Open = append(s.Open, OpenSession{
			SessionID:  g.req.SessionID,
			Span:       g.req.Span,
			MaxLength:  g.req.MaxLength,
			CacheBytes: g.bytes,
			Remaining:  g.remainingAtLocked(now),
			Age:        now.Sub(g.openedAt).Seconds(),
		})
	}
	slices.SortFunc(s.Open, func(a, b OpenSession) int {
		return cmp.Or(cmp.Compare(a.Remaining, b.Remaining), cmp.Compare(b.Age, a.Age), cmp.Compare(a.SessionID, b.SessionID))
	})
	open, pending := c.estimateInputsLocked(now)
	for i, w := range c.queueLocked {
		s.Queue = append(s.Queue, QueuedSession{
			SessionID:     w.req.SessionID,
			Position:      i,
			Span:          w.req.Span,
			CacheBytes:    w.bytes,
			Waited:        now.Sub(w.queued).Seconds(),
			EstimatedWait: EstimateWait(c.budget, c.cfg.MaxSessions, open, pending, i),
		})
	}
	return s
}

// estimateInputsLocked returns the open sessions and the queue as
// EstimateWait takes them.
func (c *Controller) estimateInputsLocked(now time.Time) ([]Held, []Pending) {
	open := make([]Held, 0, len(c.openLocked))
	for g := range c.openLocked {
		open = append(open, Held{Remaining: g.remainingAtLocked(now), Bytes: g.bytes})
	}
	pending := make([]Pending, len(c.queueLocked), len(c.queueLocked)+1)
	for i, w := range c.queueLocked {
		pending[i] = Pending{Duration: w.req.Remaining, Bytes: w.bytes}
	}
	return open, pending
}

// waiterStatusLocked returns w's position and estimated wait.
func (c *Controller) waiterStatusLocked(w *waiter) WaitStatus {
	open, pending := c.estimateInputsLocked(time.Now())
	pos := slices.Index(c.queueLocked, w)
	return WaitStatus{
		Position:      pos,
		QueueLen:      len(c.queueLocked),
		EstimatedWait: EstimateWait(c.budget, c.cfg.MaxSessions, open, pending, pos),
	}
}

// statusLocked returns the status a request of bytes would have if queued
// now at position pos (the tail), without queueing it.
func (c *Controller) statusLocked(pos int, bytes int64, duration float64) WaitStatus {
	open, pending := c.estimateInputsLocked(time.Now())
	pending = append(pending, Pending{Duration: duration, Bytes: bytes})
	return WaitStatus{
		Position:      pos,
		QueueLen:      len(pending),
		EstimatedWait: EstimateWait(c.budget, c.cfg.MaxSessions, open, pending, pos),
	}
}
