package blocks

import (
	"fmt"

	"github.com/swarmllm/swarm/swarm"
)

// CPUBackendName is the name of the built-in CPU backend.
const CPUBackendName = "cpu"

// cpuBackend builds the CPU engine (engine.go, block.go, batch.go): weights
// kept in their stored dtype (f32, f16, bf16, GGML's quantized blocks) in
// place in a memory-mapped file where their rows are stored as the kernels
// read them (mmap.go), else in the Go heap; float32 or float16 attention
// caches (cache); AVX2 kernels where the machine has them.
type cpuBackend struct {
	// cache is the dtype of K and V: DTypeF32 (the zero value means it) or
	// DTypeF16.
	cache swarm.DType
}

func init() {
	if err := RegisterBackend(cpuBackend{}); err != nil {
		panic(err)
	}
}

// CPU returns the built-in CPU backend.
func CPU() Backend { return cpuBackend{} }

// Name is "cpu".
func (cpuBackend) Name() string { return CPUBackendName }

// CacheDType is the dtype the engines keep K and V in: float32 unless
// chosen otherwise (WithCacheDType).
func (b cpuBackend) CacheDType() swarm.DType {
	if b.cache == swarm.DTypeF16 {
		return swarm.DTypeF16
	}
	return swarm.DTypeF32
}

// WithCacheDType returns the CPU backend keeping attention caches as d:
// DTypeF32 or DTypeF16 (half the bytes per token; keys and values are
// rounded to binary16 when computed, so prefill and decode still agree bit
// for bit, but logits differ slightly from the float32 cache's). Other
// dtypes give an error wrapping ErrArgument.
func (b cpuBackend) WithCacheDType(d swarm.DType) (Backend, error) {
	if d != swarm.DTypeF32 && d != swarm.DTypeF16 {
		return nil, fmt.Errorf("%w: attention cache dtype %v, want f32 or f16", ErrArgument, d)
	}
	return cpuBackend{cache: d}, nil
}

// WithCacheDType returns backend b keeping its attention caches as d, when
// b offers that choice (a method WithCacheDType(swarm.DType) (Backend,
// error), as the CPU backend has) or already keeps d. Otherwise it returns
// an error wrapping ErrArgument that names the backend's own dtype.
func WithCacheDType(b Backend, d swarm.DType) (Backend, error) {
	if b.CacheDType() == d {
		return b, nil
	}
	if c, ok := b.(interface {
		WithCacheDType(swarm.DType) (Backend, error)
	}); ok {
		return c.WithCacheDType(d)
	}
	return nil, fmt.Errorf("%w: backend %s keeps its attention caches as %v only, not %v", ErrArgument, b.Name(), b.CacheDType(), d)
}

// NewEngine builds a CPU engine for the span's blocks: matrices in their
// stored dtype, in place in the mapped file when t is a RowMapper that
// offers them (the engine releases them on Close), else read into the
// heap; vectors widened to float32.
func (b cpuBackend) NewEngine(t SpanTensors) (Engine, error) {
	info, span := t.Info(), t.Span()
	layers := make([]*layer, 0, span.Len())
	var releases []func()
	fail := func(err error) (Engine, error) {
		for _, r := range releases {
			r()
		}
		return nil, err
	}
	for blk := span.Start; blk < span.End; blk++ {
		l, err := cpuLayer(t, blk, info.IsSliding(blk), &releases)
		if err != nil {
			return fail(err)
		}
		layers = append(layers, l)
	}
	cfg := t.Config()
	info.CacheBytesPerToken = CacheBytesPerToken(info, b.CacheDType())
	params := archParams{attnScale: cfg.AttnScale, slidingTheta: cfg.SlidingTheta, act: cfg.Activation}
	e, err := newEngine(info, params, span, layers, cfg.RopeFactors)
	if err != nil {
		return fail(err)
	}
	e.releases, e.cacheF16 = releases, b.CacheDType() == swarm.DTypeF16
	return e, nil
}

// cpuLayer reads the tensors block blk holds, appending the release of
// each matrix used in place in a mapped file to releases.
func cpuLayer(t SpanTensors, blk int, sliding bool, releases *[]func()) (*layer, error) {
	mapper, _ := t.(RowMapper)
	l := &layer{sliding: sliding}
	mats, vecs := l.matrices(), l.vectors()
	for slot := range NumSlots {
		ti, ok := t.Tensor(blk, slot)
		if !ok {
			continue
		}
		l.stored += ti.Bytes()
		if !slot.IsMatrix() {
			v, err := t.Vector(blk, slot)
			if err != nil {
				return nil, err
			}
			*vecs[slot] = v
			continue
		}
		if mapper != nil {
			raw, release, ok, err := mapper.MapRows(blk, slot)
			if err != nil {
				return nil, err
			}
			if ok {
				mat, inPlace, err := mappedMatrix(ti.Rows, ti.Cols, ti.DType, raw)
				if err != nil {
					release()
					return nil, fmt.Errorf("block %d: tensor %s: %w", blk, ti.Name, err)
				}
				if inPlace {
					*releases = append(*releases, release)
					*mats[slot] = mat
					continue
				}
				release()
			}
		}
		mat, err := newMatrix(ti.Rows, ti.Cols, ti.DType)
		if err != nil {
			return nil, fmt.Errorf("block %d: tensor %s: %w", blk, ti.Name, err)
		}
		err = t.ReadRows(blk, slot, func(r0 int, raw []byte) error {
			mat.setRaw(r0, raw)
			return nil
		})
		if err != nil {
			return nil, err
		}
		*mats[slot] = mat
	}
	return l, nil
}
