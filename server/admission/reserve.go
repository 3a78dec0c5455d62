package admission

import "fmt"

// SetReserved sets bytes of the attention-cache budget M - s_m*m aside,
// for memory the process uses outside this controller's sessions: during
// a live span move (node.RunServer) the weights of the span being loaded
// (reserved on the old server) and the weights and open caches of the
// span being drained (reserved on the new one), so that both servers
// together never admit more than M. Sessions are admitted only while
// used + reserved + their caches fit the budget; lowering the reservation
// admits waiting sessions that now fit.
//
// Raising the reservation takes only memory no open session holds: it
// fails with an error wrapping ErrNeverFits when used + bytes exceeds the
// budget, and leaves the reservation unchanged. Lowering it always
// succeeds. bytes < 0 wraps ErrBadRequest.
func (c *Controller) SetReserved(bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("%w: reserve %d bytes, want >= 0", ErrBadRequest, bytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes > c.reservedLocked && c.usedLocked+bytes > c.budget {
		return fmt.Errorf("%w: cannot reserve %d bytes: open sessions hold %d of the %d cache bytes (M %d - weights %d)",
			ErrNeverFits, bytes, c.usedLocked, c.budget, c.cfg.MemoryBytes, c.cfg.MemoryBytes-c.budget)
	}
	lower := bytes < c.reservedLocked
	c.reservedLocked = bytes
	if lower {
		c.dispatchLocked()
		c.notifyLocked()
	}
	return nil
}

// Reserved returns the bytes SetReserved set aside.
func (c *Controller) Reserved() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reservedLocked
}
