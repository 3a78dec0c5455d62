package blocks

import (
	"fmt"
	"math"
	"sync"

	"github.com/swarmllm/swarm/swarm"
)

// cpuEngine is the CPU Engine for one span: the weights of its blocks and the
// RoPE frequencies. Weights are read-only after construction, so sessions
// run concurrently without locks on the hot path; mu only keeps Close from
// releasing weights under a running Forward.
type cpuEngine struct {
	info   swarm.ModelInfo
	params archParams
	span   swarm.Span
	rope   *rope
	// local is the RoPE of sliding-window blocks when it differs from rope
	// (Gemma 3's rope_local_base_freq), else nil.
	local       *rope
	weightBytes int64
	// fullCaches makes sessions give sliding-window blocks full-length
	// caches instead of rings (tests compare the two; see export_test.go).
	fullCaches bool
	// cacheF16 keeps K and V as binary16 (cpuBackend.cache).
	cacheF16 bool

	mu     sync.RWMutex // guards layers, releases and closed
	layers []*layer     // layers[b-span.Start] is block b
	// releases let go of the mapped file regions the layers' matrices
	// point into (cpuLayer); Close calls them.
	releases []func()
	closed   bool
}

var _ Engine = (*cpuEngine)(nil)

// newEngine builds an engine over already-loaded layers of span.
func newEngine(info swarm.ModelInfo, params archParams, span swarm.Span, layers []*layer, ropeFactors []float32) (*cpuEngine, error) {
	if len(layers) != span.Len() {
		return nil, fmt.Errorf("%w: %d layers for span %s", ErrArgument, len(layers), span)
	}
	r, err := newRope(info, ropeFactors)
	if err != nil {
		return nil, err
	}
	if params.attnScale == 0 {
		params.attnScale = math.Sqrt(float64(info.HeadDim))
	}
	e := &cpuEngine{info: info, params: params, span: span, rope: r, layers: layers}
	if info.SlidingWindow > 0 && params.slidingTheta > 0 {
		// Sliding blocks rotate with their own base and no scaling
		// (llama.cpp rope_freq_scale_train_swa = 1).
		li := info
		li.RopeTheta, li.RopeScaling = params.slidingTheta, nil
		if e.local, err = newRope(li, nil); err != nil {
			return nil, err
		}
	}
	for _, l := range layers {
		e.weightBytes += l.bytes()
	}
	return e, nil
}

// ropeRows fills the RoPE angles of rows row.. of s for positions pos..,
// n rows: the global table and, when sliding blocks have their own, the
// local one.
func (e *cpuEngine) ropeRows(s *scratch, row, pos, n int) {
	half := e.info.HeadDim / 2
	for t := range n {
		r := (row + t) * half
		e.rope.table(pos+t, s.cos[r:r+half], s.sin[r:r+half])
		if e.local != nil {
			e.local.table(pos+t, s.cosL[r:r+half], s.sinL[r:r+half])
		}
	}
}

// Info describes the whole model the span belongs to.
func (e *cpuEngine) Info() swarm.ModelInfo { return e.info }

// Span is the blocks whose weights are loaded.
func (e *cpuEngine) Span() swarm.Span { return e.span }

// WeightBytes is the bytes of the loaded block weights as stored, s_m * m_j.
func (e *cpuEngine) WeightBytes() int64 { return e.weightBytes }

// NewSession allocates attention caches for the blocks of sub (inside
// Span()) sized for maxLength tokens (1 <= maxLength <= Info().MaxSeqLen when
// MaxSeqLen is known). The caches are allocated up front:
// Info().SpanCacheBytes(sub, maxLength) bytes, where a sliding-window block
// holds a ring of Info().CacheTokens(b, maxLength) positions (see
// swarm.SlidingRewind). It returns an error wrapping ErrArgument for a bad
// sub-span or length, ErrClosed after Close.
func (e *cpuEngine) NewSession(sub swarm.Span, maxLength int) (Session, error) {
	if sub.Empty() || !e.span.ContainsSpan(sub) {
		return nil, fmt.Errorf("%w: session span %s must be a non-empty part of the engine's span %s", ErrArgument, sub, e.span)
	}
	if maxLength < 1 || (e.info.MaxSeqLen > 0 && maxLength > e.info.MaxSeqLen) {
		return nil, fmt.Errorf("%w: max length %d, want 1..%d (the model's max_seq_len)", ErrArgument, maxLength, e.info.MaxSeqLen)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, fmt.Errorf("%w: engine for span %s", ErrClosed, e.span)
	}
	kvDim := e.info.NKVHeads * e.info.HeadDim
	s := &cpuSession{e: e, span: sub, maxLength: maxLength, caches: make([]kvCache, sub.Len())}
	for i := range s.caches {
		n := e.info.CacheTokens(sub.Start+i, maxLength)
		if e.fullCaches {
			n = maxLength
		}
		ring := 0
		if n < maxLength {
			// A ring: every sliding block of the session has the same size.
			ring, s.ring = n, n
		}
		s.caches[i] = newKVCache(n, kvDim, ring, e.cacheF16)
		s.cacheBytes += int64(n) * e.info.CacheBytesPerToken
	}
	return s, nil
}

// Close releases the weights. Sessions still open fail with ErrClosed from
// then on; Close waits for running Forward calls to finish.
func (e *cpuEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.layers = nil
	// Every reader of the weights holds mu (read), so no Forward still
	// reads the mapping when it goes.
	for _, r := range e.releases {
		r()
	}
	e.releases = nil
	return nil
}
