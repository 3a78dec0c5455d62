package blocks

import (
	"fmt"

	"github.com/swarmllm/swarm/swarm"
)

// CPUBackendName is the name of the built-in CPU backend.
const CPUBackendName = "cpu"

// cpuBackend builds the CPU engine (engine.go, block.go, batch.go): weights
// kept in their stored dtype (f32, f16, bf16, GGML's quantized blocks) in
// the Go heap, float32 attention caches, AVX2 kernels where the machine has
// them.
type cpuBackend struct{}

func init() {
	if err := RegisterBackend(cpuBackend{}); err != nil {
		panic(err)
	}
}

// CPU returns the built-in CPU backend.
func CPU() Backend { return cpuBackend{} }

// Name is "cpu".
func (cpuBackend) Name() string { return CPUBackendName }

// CacheDType is float32: the CPU engine keeps K and V in float32.
func (cpuBackend) CacheDType() swarm.DType { return swarm.DTypeF32 }

// NewEngine reads every tensor of the span's blocks (matrices in their
// stored dtype, vectors widened to float32) and builds a CPU engine. It
// uses nothing of t beyond the SpanTensors interface.
func (b cpuBackend) NewEngine(t SpanTensors) (Engine, error) {
	info, span := t.Info(), t.Span()
	layers := make([]*layer, 0, span.Len())
	for blk := span.Start; blk < span.End; blk++ {
		l, err := cpuLayer(t, blk, info.IsSliding(blk))
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	cfg := t.Config()
	info.CacheBytesPerToken = CacheBytesPerToken(info, b.CacheDType())
	params := archParams{attnScale: cfg.AttnScale, slidingTheta: cfg.SlidingTheta, act: cfg.Activation}
	return newEngine(info, params, span, layers, cfg.RopeFactors)
}

// cpuLayer reads the tensors block blk holds.
func cpuLayer(t SpanTensors, blk int, sliding bool) (*layer, error) {
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
