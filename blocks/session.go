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
	length    int       // positions held in every cache
	closed    bool
	scratch   scratch
}

var _ Session = (*cpuSession)(nil)

// Forward runs hidden states [nTokens, DModel] at positions
// pos..pos+nTokens-1 through the session's blocks and returns the output
// hidden states [nTokens, DModel] in a new slice (hidden is not modified).
// pos < Len() first truncates the caches to pos (replay after failover). It
// returns an error wrapping ErrPosition if pos > Len() or pos+nTokens
// exceeds the max length, ErrArgument if len(hidden) != nTokens*DModel or
// nTokens < 1, ErrClosed after Close (of the session or its engine), and
// ctx's error when ctx ends (checked before each block; the caches then
// hold positions 0..pos-1).
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

	s.length = pos // truncate: positions >= pos are recomputed
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
	}
	return nil
}

// Len is the number of positions held in the attention caches.
func (s *cpuSession) Len() int { return s.length }

// Span is the blocks this session processes.
func (s *cpuSession) Span() swarm.Span { return s.span }

// MaxLength is the number of positions the caches were sized for.
func (s *cpuSession) MaxLength() int { return s.maxLength }

// CacheBytes is the attention-cache memory reserved by the session in bytes:
// Span().Len() * Info().CacheBytes(MaxLength()).
func (s *cpuSession) CacheBytes() int64 {
	return int64(s.span.Len()) * s.e.info.CacheBytes(s.maxLength)
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
