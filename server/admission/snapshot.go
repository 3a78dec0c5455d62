package admission

import (
	"cmp"
	"slices"
	"time"

	"github.com/swarmllm/swarm/api"
)

// Snapshot is the controller's state at one instant: the admission part
// of the info document a server answers (api.Admission).
type Snapshot = api.Admission

// Snapshot returns the current state.
func (c *Controller) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	s := Snapshot{
		MemoryBytes:        c.cfg.MemoryBytes,
		WeightBytes:        c.cfg.MemoryBytes - c.budget,
		CacheBytesUsed:     c.usedLocked,
		CacheBytesReserved: c.reservedLocked,
		CacheBytesFree:     c.budget - c.usedLocked - c.reservedLocked,
		MaxSessions:        c.cfg.MaxSessions,
		Closed:             c.closedLocked,
		Open:               make([]api.OpenSession, 0, len(c.openLocked)),
		Queue:              make([]api.QueuedSession, 0, len(c.queueLocked)),
	}
	for g := range c.openLocked {
		s.Open = append(s.Open, api.OpenSession{
			SessionID:  g.req.SessionID,
			Span:       g.req.Span,
			MaxLength:  g.req.MaxLength,
			CacheBytes: g.bytes,
			Remaining:  g.remainingAtLocked(now),
			Age:        now.Sub(g.openedAt).Seconds(),
		})
	}
	slices.SortFunc(s.Open, func(a, b api.OpenSession) int {
		return cmp.Or(cmp.Compare(a.Remaining, b.Remaining), cmp.Compare(b.Age, a.Age), cmp.Compare(a.SessionID, b.SessionID))
	})
	open, pending := c.estimateInputsLocked(now)
	for i, w := range c.queueLocked {
		s.Queue = append(s.Queue, api.QueuedSession{
			SessionID:     w.req.SessionID,
			Position:      i,
			Span:          w.req.Span,
			CacheBytes:    w.bytes,
			Waited:        now.Sub(w.queued).Seconds(),
			EstimatedWait: EstimateWait(c.budget-c.reservedLocked, c.cfg.MaxSessions, open, pending, i),
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
		EstimatedWait: EstimateWait(c.budget-c.reservedLocked, c.cfg.MaxSessions, open, pending, pos),
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
		EstimatedWait: EstimateWait(c.budget-c.reservedLocked, c.cfg.MaxSessions, open, pending, pos),
	}
}
