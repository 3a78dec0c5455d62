package cuda

import (
	"context"
	"fmt"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// devCache is one block's attention cache of a session on the device: K
// and V, [rows, NKVHeads*HeadDim] fp16 each; a sliding-window block's is
// a ring of rows positions (position p in row p % rows).
type devCache struct {
	k, v uint64
	rows int
	ring bool
}

// session is a CUDA Session: its caches live in device memory, allocated
// whole when it opens.
type session struct {
	e      *engine
	sub    swarm.Span
	maxLen int
	length int
	// high is one past the highest position written since the last
	// restart at 0: a ring of r rows holds positions high-r..high-1.
	high   int
	caches []devCache
	bytes  int64
	closed bool
}

var _ blocks.Session = (*session)(nil)

// NewSession allocates the caches of the blocks of sub for maxLength
// tokens: Info().SpanCacheBytes(sub, maxLength) bytes of device memory.
func (e *engine) NewSession(sub swarm.Span, maxLength int) (blocks.Session, error) {
	if sub.Start < e.span.Start || sub.End > e.span.End || sub.Len() < 1 {
		return nil, fmt.Errorf("%w: sub-span %s outside the engine's span %s", blocks.ErrArgument, sub, e.span)
	}
	if maxLength < 1 || (e.info.MaxSeqLen > 0 && maxLength > e.info.MaxSeqLen) {
		return nil, fmt.Errorf("%w: max length %d, want 1..%d", blocks.ErrArgument, maxLength, e.info.MaxSeqLen)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, e.errClosed()
	}
	s := &session{e: e, sub: sub, maxLen: maxLength}
	kvDim := e.info.NKVHeads * e.info.HeadDim
	err := e.g.do(func() error {
		for b := sub.Start; b < sub.End; b++ {
			rows := e.info.CacheTokens(b, maxLength)
			c := devCache{rows: rows, ring: e.info.IsSliding(b) && rows < maxLength}
			var err error
			if c.k, err = e.g.alloc(2 * int64(rows) * int64(kvDim)); err != nil {
				return err
			}
			if c.v, err = e.g.alloc(2 * int64(rows) * int64(kvDim)); err != nil {
				e.g.free(c.k)
				return err
			}
			s.caches = append(s.caches, c)
			s.bytes += 4 * int64(rows) * int64(kvDim)
		}
		return nil
	})
	if err != nil {
		s.free()
		return nil, fmt.Errorf("cuda: attention caches of %s for %d tokens: %w", sub, maxLength, err)
	}
	if e.open == nil {
		e.open = map[*session]struct{}{}
	}
	e.open[s] = struct{}{}
	return s, nil
}

// free releases the caches (the engine's context is made current).
func (s *session) free() {
	_ = s.e.g.do(func() error {
		_ = s.e.g.sync()
		for _, c := range s.caches {
			s.e.g.free(c.k)
			s.e.g.free(c.v)
		}
		return nil
	})
	s.caches = nil
}

// Len is the positions held in the caches.
func (s *session) Len() int { return s.length }

// Span is the blocks the session runs.
func (s *session) Span() swarm.Span { return s.sub }

// CacheBytes is the device memory of the caches, bytes.
func (s *session) CacheBytes() int64 { return s.bytes }

// HeldBytes is CacheBytes: the caches are allocated whole.
func (s *session) HeldBytes() int64 { return s.bytes }

// Close frees the caches.
func (s *session) Close() error {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if !s.e.closed {
		s.free()
		delete(s.e.open, s)
	}
	return nil
}

// ringFrom is the first position every ring cache still holds: a ring of
// r rows lost the positions before high - r.
func (s *session) ringFrom() int {
	from := 0
	for _, c := range s.caches {
		if c.ring {
			from = max(from, s.high-c.rows)
		}
	}
	return from
}

// check validates a step as blocks.Session.Forward documents.
func (s *session) check(pos int, hidden []float32, n int) error {
	d := s.e.info.DModel
	switch {
	case n < 1 || len(hidden) != n*d:
		return fmt.Errorf("%w: %d hidden values for %d tokens, want nTokens >= 1 and nTokens*d_model = %d",
			blocks.ErrArgument, len(hidden), n, max(n, 0)*d)
	case pos < 0 || pos > s.length:
		return fmt.Errorf("%w: position %d, the caches hold %d (want 0..%d)", blocks.ErrPosition, pos, s.length, s.length)
	case pos+n > s.maxLen:
		return fmt.Errorf("%w: positions %d..%d past the session's max length %d", blocks.ErrPosition, pos, pos+n-1, s.maxLen)
	case pos > 0 && max(0, pos-s.e.info.SlidingWindow+1) < s.ringFrom():
		return fmt.Errorf("%w: position %d attends to positions from %d, but the sliding-window caches hold only %d..%d; go back at most %d positions or restart at 0",
			blocks.ErrPosition, pos, max(0, pos-s.e.info.SlidingWindow+1), s.ringFrom(), s.length-1, swarm.SlidingRewind)
	}
	return nil
}

// Forward runs hidden [nTokens, DModel] at positions pos.. through the
// session's blocks on the device (see blocks.Session). Steps longer than
// maxChunk tokens run as consecutive chunks.
func (s *session) Forward(ctx context.Context, pos int, hidden []float32, nTokens int) ([]float32, error) {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.closed || e.closed {
		return nil, fmt.Errorf("%w: session over %s", blocks.ErrClosed, s.sub)
	}
	if err := s.check(pos, hidden, nTokens); err != nil {
		return nil, err
	}
	return s.run(ctx, pos, hidden, nTokens)
}

// run is Forward once checked, under e.mu: the step in passes of at most
// maxChunk tokens.
func (s *session) run(ctx context.Context, pos int, hidden []float32, nTokens int) ([]float32, error) {
	e := s.e
	d := e.info.DModel
	out := make([]float32, nTokens*d)
	if pos == 0 {
		s.high = 0
	}
	for c := 0; c < nTokens; c += maxChunk {
		n := min(maxChunk, nTokens-c)
		if err := ctx.Err(); err != nil {
			s.length = pos + c
			return nil, fmt.Errorf("blocks: forward at position %d: %w", pos+c, err)
		}
		s.high = max(s.high, pos+c+n) // the chunk writes its positions, even if it fails
		err := e.g.do(func() error {
			return e.forward([]seg{{s: s, pos: pos + c, n: n}}, hidden[c*d:(c+n)*d], out[c*d:(c+n)*d])
		})
		if err != nil {
			s.length = pos + c
			return nil, err
		}
		s.length = pos + c + n
	}
	return out, nil
}
