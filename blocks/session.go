package blocks

import (
	"context"
	"fmt"

	"github.com/swarmllm/swarm/swarm"
)

// cpuSession is one generation's attention caches over a sub-span of a
// cpuEngine. It is used by one goroutine at a time (see Session).
type cpuSession struct {
	e         *cpuEngine
	span      swarm.Span
	maxLength int
	caches    []kvCache // caches[b-span.Start] is block b's
	length    int       // positions computed: full caches hold 0..length-1, rings kvCache.from..length-1
	// ring is the rows of the session's ring caches (sliding-window
	// blocks, kvCache.ring), 0 when it has none.
	ring       int
	cacheBytes int64 // bytes the caches may grow to (admitted)
	closed     bool
	scratch    scratch
}

var _ Session = (*cpuSession)(nil)

// Forward runs hidden states [nTokens, DModel] at positions
// pos..pos+nTokens-1 through the session's blocks and returns the output
// hidden states [nTokens, DModel] in a new slice (hidden is not modified).
// pos < Len() first truncates the caches to pos (replay after failover).
// With ring caches (sliding-window blocks, swarm.SlidingRewind), pos may be
// at most SlidingRewind+1 positions before Len() (or 0): the window of
// position pos must still be in the rings. It returns an error wrapping
// ErrPosition if pos > Len(), pos+nTokens exceeds the max length or pos
// goes back further than the rings hold, ErrArgument if len(hidden) !=
// nTokens*DModel or nTokens < 1, ErrClosed after Close (of the session or
// its engine), and ctx's error when ctx ends (checked before each block;
// Len() is then pos, and a ring that a block of a step longer than
// SlidingRewind+1 tokens already overwrote no longer holds the window of
// pos: a retry there fails with ErrPosition, a restart at 0 works).
func (s *cpuSession) Forward(ctx context.Context, pos int, hidden []float32, nTokens int) ([]float32, error) {
	if err := s.check(pos, hidden, nTokens); err != nil {
		return nil, err
	}
	info := &s.e.info
	s.e.mu.RLock()
	defer s.e.mu.RUnlock()
	if s.e.closed {
		return nil, fmt.Errorf("%w: engine for span %s", ErrClosed, s.e.span)
	}

	s.truncate(pos)
	s.scratch.grow(*info, nTokens)
	s.e.ropeRows(&s.scratch, 0, pos, nTokens)
	x := make([]float32, len(hidden))
	copy(x, hidden)
	for i := range s.caches {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("blocks: forward at position %d: %w", pos, err)
		}
		l := s.e.layers[s.span.Start-s.e.span.Start+i]
		s.e.forwardBlock(l, []seg{{c: &s.caches[i], n: nTokens, pos: pos}}, &s.scratch, x, nTokens)
	}
	s.length = pos + nTokens
	return x, nil
}

// check returns the error Forward gives for its arguments before running,
// or nil.
func (s *cpuSession) check(pos int, hidden []float32, nTokens int) error {
	d := s.e.info.DModel
	switch {
	case s.closed:
		return fmt.Errorf("%w: session over %s", ErrClosed, s.span)
	case nTokens < 1 || len(hidden) != nTokens*d:
		return fmt.Errorf("%w: %d hidden values for %d tokens, want nTokens >= 1 and nTokens*d_model = %d",
			ErrArgument, len(hidden), nTokens, max(nTokens, 0)*d)
	case pos < 0 || pos > s.length:
		return fmt.Errorf("%w: position %d, the caches hold %d (want 0..%d)", ErrPosition, pos, s.length, s.length)
	case pos+nTokens > s.maxLength:
		return fmt.Errorf("%w: positions %d..%d past the session's max length %d", ErrPosition, pos, pos+nTokens-1, s.maxLength)
	case s.ring > 0 && pos > 0 && max(0, pos-s.e.info.SlidingWindow+1) < s.ringFrom():
		from := s.ringFrom()
		if from >= s.length {
			return fmt.Errorf("%w: position %d attends to positions %d..%d of its sliding window, but the sliding-window caches hold none of them: a step cut short overwrote them; restart at 0",
				ErrPosition, pos, max(0, pos-s.e.info.SlidingWindow+1), pos-1)
		}
		return fmt.Errorf("%w: position %d attends to positions %d..%d of its sliding window, but the sliding-window caches (%d positions: window %d + rewind allowance %d) hold only %d..%d; "+
			"a step may go back at most %d positions before the cached length %d, or restart at 0",
			ErrPosition, pos, max(0, pos-s.e.info.SlidingWindow+1), pos-1, s.ring, s.e.info.SlidingWindow, swarm.SlidingRewind,
			from, s.length-1, s.length-from-s.e.info.SlidingWindow+1, s.length)
	}
	return nil
}

// ringFrom is the first position every ring cache still holds.
func (s *cpuSession) ringFrom() int {
	from := 0
	for i := range s.caches {
		from = max(from, s.caches[i].from)
	}
	return from
}

// truncate drops the positions >= pos before a step there: they are
// recomputed, and a ring then holds min(from, pos)..pos-1 until the step
// writes it (kvCache.store), block by block, so that a step that ctx ends
// half-way leaves each ring's from exact.
func (s *cpuSession) truncate(pos int) {
	s.length = pos
	for i := range s.caches {
		if c := &s.caches[i]; c.ring > 0 {
			c.from = min(c.from, pos)
		}
	}
}

// Len is the number of positions held in the attention caches.
func (s *cpuSession) Len() int { return s.length }

// Span is the blocks this session processes.
func (s *cpuSession) Span() swarm.Span { return s.span }

// MaxLength is the number of positions the caches were sized for.
func (s *cpuSession) MaxLength() int { return s.maxLength }

// CacheBytes is the attention-cache memory the session is sized (and
// admitted) for, bytes: Info().SpanCacheBytes(Span(), MaxLength()).
func (s *cpuSession) CacheBytes() int64 { return s.cacheBytes }

// HeldBytes is the attention-cache memory of the pages allocated so far,
// bytes: what the positions written reached, rounded up to pages of 64
// positions per block (at most CacheBytes).
func (s *cpuSession) HeldBytes() int64 {
	var n int64
	for i := range s.caches {
		n += s.caches[i].heldBytes()
	}
	return n
}

// Close releases the caches; further calls return ErrClosed.
func (s *cpuSession) Close() error {
	if s.closed {
		return fmt.Errorf("%w: session over %s closed twice", ErrClosed, s.span)
	}
	s.closed = true
	s.caches = nil
	s.scratch = scratch{}
	return nil
}
