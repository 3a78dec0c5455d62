package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/swarmllm/swarm/swarm"
	"github.com/x448/float16"
)

// Hidden is a hidden-state tensor [NTokens, DModel] as it travels in Step and
// Result frames. In memory it is always float32; DType is how it goes on the
// wire, and encoding rounds each value to it (round to nearest, ties to even).
type Hidden struct {
	// DType is the wire dtype: swarm.DTypeF32 (4 bytes per element),
	// DTypeF16 or DTypeBF16 (2 bytes per element).
	DType swarm.DType
	// NTokens is the number of rows (tokens), at least 1.
	NTokens int
	// DModel is the number of columns (the model's hidden size), at least 1.
	DModel int
	// Data is the tensor row-major, len(Data) == NTokens*DModel.
	Data []float32
}

// Validate checks the dtype and that the shape matches the data. It returns
// an error wrapping ErrBadTensor naming what is wrong.
func (h Hidden) Validate() error {
	if err := checkWireDType(h.DType); err != nil {
		return err
	}
	if h.NTokens < 1 || h.DModel < 1 || int64(h.NTokens) > math.MaxUint32 || int64(h.DModel) > math.MaxUint32 {
		return fmt.Errorf("%w: shape [%d, %d]: want both sides in 1 .. 2^32-1", ErrBadTensor, h.NTokens, h.DModel)
	}
	if n := uint64(h.NTokens) * uint64(h.DModel); n != uint64(len(h.Data)) {
		return fmt.Errorf("%w: shape [%d, %d] has %d elements but the data has %d", ErrBadTensor, h.NTokens, h.DModel, n, len(h.Data))
	}
	return nil
}

// WireBytes is the size in bytes of the tensor's elements on the wire
// (without its 9-byte dtype and shape prefix).
func (h Hidden) WireBytes() int {
	return len(h.Data) * elemBytes(h.DType)
}

// checkWireDType reports whether d can carry hidden states on the wire.
func checkWireDType(d swarm.DType) error {
	if elemBytes(d) == 0 {
		return fmt.Errorf("%w: dtype %s cannot carry hidden states (want f32, f16 or bf16)", ErrBadTensor, d)
	}
	return nil
}

// elemBytes is the wire size of one element, 0 for a non-wire dtype.
func elemBytes(d swarm.DType) int {
	switch d {
	case swarm.DTypeF32:
		return 4
	case swarm.DTypeF16, swarm.DTypeBF16:
		return 2
	}
	return 0
}

// AppendTensor appends x encoded as dtype dt (little-endian, rounded to
// nearest even for f16 and bf16) to dst and returns the extended slice. It
// returns an error wrapping ErrBadTensor for a dtype other than f32, f16 or
// bf16.
func AppendTensor(dst []byte, dt swarm.DType, x []float32) ([]byte, error) {
	k := elemBytes(dt)
	if k == 0 {
		return dst, checkWireDType(dt)
	}
	off := len(dst)
	dst = slices.Grow(dst, k*len(x))[:off+k*len(x)]
	out := dst[off:]
	// Each loop reslices out so the compiler drops the bounds checks.
	switch dt {
	case swarm.DTypeF32:
		for _, v := range x {
			binary.LittleEndian.PutUint32(out, math.Float32bits(v))
			out = out[4:]
		}
	case swarm.DTypeF16:
		for _, v := range x {
			binary.LittleEndian.PutUint16(out, float16.Fromfloat32(v).Bits())
			out = out[2:]
		}
	case swarm.DTypeBF16:
		for _, v := range x {
			binary.LittleEndian.PutUint16(out, BF16FromFloat32(v))
			out = out[2:]
		}
	}
	return dst, nil
}

// DecodeTensor decodes b, elements of dtype dt, into float32 values appended
// to dst[:0] (dst is reused when large enough) and returns them. len(b) must
// be a multiple of the element size; otherwise, or for a non-wire dtype, it
// returns an error wrapping ErrBadTensor.
func DecodeTensor(dst []float32, dt swarm.DType, b []byte) ([]float32, error) {
	k := elemBytes(dt)
	if k == 0 {
		return dst[:0], checkWireDType(dt)
	}
	if len(b)%k != 0 {
		return dst[:0], fmt.Errorf("%w: %d bytes is not a whole number of %s elements", ErrBadTensor, len(b), dt)
	}
	n := len(b) / k
	dst = slices.Grow(dst[:0], n)[:n]
	switch dt {
	case swarm.DTypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b))
			b = b[4:]
		}
	case swarm.DTypeF16:
		table := f16Table()
		for i := range dst {
			dst[i] = table[binary.LittleEndian.Uint16(b)]
			b = b[2:]
		}
	case swarm.DTypeBF16:
		for i := range dst {
			dst[i] = Float32FromBF16(binary.LittleEndian.Uint16(b))
			b = b[2:]
		}
	}
	return dst, nil
}

// f16Table maps every binary16 bit pattern to its float32 value (256 KiB,
// built on first use from float16.Float16.Float32, which is exact).
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return t
})

// BF16FromFloat32 rounds f to bfloat16 (the top 16 bits of binary32) with
// round-to-nearest-even; values beyond the largest bfloat16 become ±Inf and
// a NaN stays a (quiet) NaN with its sign.
func BF16FromFloat32(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep sign and top payload bits, force quiet.
		return uint16(u>>16) | 0x0040
	}
	// Add 0x7fff plus the lowest kept bit: halfway cases round to even.
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// Float32FromBF16 widens a bfloat16 to float32 exactly.
func Float32FromBF16(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// FirstNonFinite returns the index of the first NaN or infinite value of
// x, or -1 when every value is finite. Hidden states must be finite: the
// server refuses a Step that is not (CodeBadValue) and the client treats
// a Result that is not as a failed server.
func FirstNonFinite(x []float32) int {
	for i, v := range x {
		// v-v is 0 for finite v and NaN for NaN and the infinities.
		if v-v != 0 {
			return i
		}
	}
	return -1
}
