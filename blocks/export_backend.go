package blocks

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// What other backends (blocks/cuda) share with the CPU engine: the RoPE
// angles, so every backend rotates by the same float32 values, and the
// widening of stored rows of any weight dtype to float32.

// RoPETable gives the rotary-embedding angles of a span's blocks, as the
// CPU engine computes them (rope.go; Su et al. 2021, RoFormer, eq. 34): the
// model's table and, when sliding-window blocks rotate with their own base
// (BlockConfig.SlidingTheta), theirs.
type RoPETable struct {
	global, local *rope
}

// NewRoPETable builds the table of a model from its info and block
// configuration. It returns an error wrapping ErrFormat for an unsupported
// RoPE scaling or a rope_freqs of the wrong length.
func NewRoPETable(info swarm.ModelInfo, cfg BlockConfig) (*RoPETable, error) {
	if err := validRopeScaling(info.RopeScaling); err != nil {
		return nil, err
	}
	g, err := newRope(info, cfg.RopeFactors)
	if err != nil {
		return nil, err
	}
	t := &RoPETable{global: g}
	if info.SlidingWindow > 0 && cfg.SlidingTheta > 0 {
		li := info
		li.RopeTheta, li.RopeScaling = cfg.SlidingTheta, nil
		if t.local, err = newRope(li, nil); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Angles writes cos and sin [HeadDim/2] of the angles at position pos, for
// a sliding-window block's table when sliding (the model's when it has no
// table of its own).
func (t *RoPETable) Angles(pos int, sliding bool, cos, sin []float32) {
	r := t.global
	if sliding && t.local != nil {
		r = t.local
	}
	r.table(pos, cos, sin)
}

// WidenRows writes the float32 values of whole stored rows raw (dtype dt,
// rows of cols elements, the layout SpanTensors.ReadRows gives) into dst,
// which must hold len(raw)/RowBytes rows of cols values. Quantized types
// are expanded as llama.cpp's dequantize_row_* functions do (quant.go).
// It returns an error wrapping ErrFormat for a dtype it cannot widen and
// ErrArgument when raw is not whole rows or dst is too short.
func WidenRows(dt swarm.DType, raw []byte, cols int, dst []float32) error {
	rb := int(dt.Bytes(int64(cols)))
	if cols < 1 || rb <= 0 || len(raw)%rb != 0 {
		return fmt.Errorf("%w: %d bytes are not whole rows of %d %v values", ErrArgument, len(raw), cols, dt)
	}
	rows := len(raw) / rb
	if len(dst) < rows*cols {
		return fmt.Errorf("%w: %d values of room for %d rows of %d", ErrArgument, len(dst), rows, cols)
	}
	switch dt {
	case swarm.DTypeF32:
		for i := range rows * cols {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return nil
	case swarm.DTypeF16:
		t := f16Table()
		for i := range rows * cols {
			dst[i] = t[uint16(raw[2*i])|uint16(raw[2*i+1])<<8]
		}
		return nil
	case swarm.DTypeBF16:
		for i := range rows * cols {
			dst[i] = bf16ToF32(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8)
		}
		return nil
	}
	deq, ok := dequantizers[dt]
	if !ok {
		return fmt.Errorf("%w: weights of dtype %v cannot be widened", ErrFormat, dt)
	}
	bs := dt.BlockSize()
	bb := int(dt.Bytes(int64(bs)))
	for r := range rows {
		dequantRow(deq, bs, bb, raw[r*rb:(r+1)*rb], dst[r*cols:(r+1)*cols])
	}
	return nil
}
