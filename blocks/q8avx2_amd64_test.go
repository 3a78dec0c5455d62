//go:build amd64 && !purego

package blocks

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// fma32Exact is a*b + c rounded once to float32 (round to nearest even),
// as VFMADD231PS computes it: the product and the sum are exact in
// big.Float before the one rounding. It is the reference the AVX2 kernels
// are held to bit for bit (fma32 may round twice).
func fma32Exact(a, b, c float32) float32 {
	p := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)).SetPrec(200), big.NewFloat(float64(b)).SetPrec(200))
	s := p.Add(p, big.NewFloat(float64(c)).SetPrec(200))
	if s.Sign() == 0 {
		// An exact zero sum: -0 only when both addends are -0
		// (IEEE 754 round to nearest).
		if math.Signbit(float64(c)) && (a == 0 || b == 0) && math.Signbit(float64(a)) != math.Signbit(float64(b)) {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}
	f, _ := s.Float32()
	return f
}

// q32Values are the q32 formats' element values as lanes32 takes them
// (q8_0Lanes ... iq4_nlLanes), with whether the block has a minimum.
var q32Values = map[q32]struct {
	withMin bool
	val     func(wb []byte, e int) int32
}{
	q32Q8_0:   {false, func(wb []byte, e int) int32 { return int32(int8(wb[2+e])) }},
	q32Q4_0:   {false, func(wb []byte, e int) int32 { return nibble(wb[2:], e) - 8 }},
	q32Q4_1:   {true, func(wb []byte, e int) int32 { return nibble(wb[4:], e) }},
	q32Q5_0:   {false, func(wb []byte, e int) int32 { return (nibble(wb[6:], e) | fifthBit(wb[2:], e)) - 16 }},
	q32Q5_1:   {true, func(wb []byte, e int) int32 { return nibble(wb[8:], e) | fifthBit(wb[4:], e) }},
	q32IQ4_NL: {false, func(wb []byte, e int) int32 { return int32(iq4Levels[nibble(wb[2:], e)]) }},
}

// q32LanesExact is lanes32 for format f with every fused multiply-add
// rounded once: the integer lane sum from the values, float32(sum) times
// (d * dx) added to accumulator 8*(b%2)+j in block order (with a minimum,
// then float32(c_j) times ((m * -1/128) * dx)), and an odd last block's
// zero partner adding 0 * 0.
func q32LanesExact(f q32, w, a []byte, nb int, acc *[q8Lanes]float32) {
	t := f16Table()
	v, bb := q32Values[f], f.blockBytes()
	for b := range q8Pairs(nb) * 2 {
		pair, h := a[(b/2)*q8ActPairBytes:], b%2
		if b == nb {
			for j := range 8 {
				acc[8+j] = fma32Exact(0, 0, acc[8+j])
			}
			break
		}
		wb := w[b*bb : (b+1)*bb]
		dx := math.Float32frombits(binary.LittleEndian.Uint32(pair[128+32*h:]))
		s := t[binary.LittleEndian.Uint16(wb)] * dx
		sm := float32(t[binary.LittleEndian.Uint16(wb[2:])]*(-1.0/128)) * dx
		for j := range 8 {
			var l int32
			for k := range 4 {
				l += v.val(wb, 4*j+k) * int32(int8(pair[32*h+4*j+k]))
			}
			acc[8*h+j] = fma32Exact(float32(l), s, acc[8*h+j])
			if v.withMin {
				c := int32(binary.LittleEndian.Uint32(pair[64+32*h+4*j:]))
				acc[8*h+j] = fma32Exact(float32(c), sm, acc[8*h+j])
			}
		}
	}
}

// q32Dtypes are the dtypes of the q32 formats.
var q32Dtypes = map[q32]swarm.DType{
	q32Q8_0: swarm.DTypeQ8_0, q32Q4_0: swarm.DTypeQ4_0, q32Q4_1: swarm.DTypeQ4_1,
	q32Q5_0: swarm.DTypeQ5_0, q32Q5_1: swarm.DTypeQ5_1, q32IQ4_NL: swarm.DTypeIQ4_NL,
}

// extremeRow sets every block of row r of m (format f) to the values of
// the largest magnitudes its format holds, alternating in pairs, with
// scale 1 (and minimum 1): with inputs of +-127 they reach VPMADDUBSW's
// largest pair sums.
func extremeRow(m *matrix, f q32, r int) {
	rb, bb := m.rowBytes(), f.blockBytes()
	for b := range m.cols / q8BlockSize {
		blk := m.q[r*rb+b*bb : r*rb+(b+1)*bb]
		binary.LittleEndian.PutUint16(blk, f32ToF16(1))
		switch f {
		case q32Q8_0:
			for e := range 32 {
				blk[2+e] = []byte{0x80, 0x7f}[(e/2)%2]
			}
		case q32Q4_0, q32IQ4_NL: // nibbles 0 and 15: -8 and 7, levels -127 and 113
			for i := range 16 {
				blk[2+i] = []byte{0xF0, 0x0F}[(i/2)%2]
			}
		case q32Q4_1:
			binary.LittleEndian.PutUint16(blk[2:], f32ToF16(1))
			for i := range 16 {
				blk[4+i] = 0xFF
			}
		case q32Q5_0: // -16 and 15
			binary.LittleEndian.PutUint32(blk[2:], 0xCCCCCCCC)
			for i := range 16 {
				blk[6+i] = []byte{0x00, 0xFF}[(i/2)%2]
			}
		case q32Q5_1: // 31 everywhere
			binary.LittleEndian.PutUint16(blk[2:], f32ToF16(1))
			binary.LittleEndian.PutUint32(blk[4:], 0xFFFFFFFF)
			for i := range 16 {
				blk[8+i] = 0xFF
			}
		}
	}
}

// TestQ32AVX2KernelsMatchExact requires the AVX2 kernels of every q32
// format times 8-bit activations (the 3x4 tile, the one-row kernel and
// the rows kernel) to leave every accumulator exactly as q32LanesExact
// does, from non-zero accumulators and across calls over consecutive
// chunks of blocks (as mulRowsQ8 makes them), for even and odd block
// counts; rows of each format's extreme values and inputs whose blocks
// quantize to +-127 reach VPMADDUBSW's largest pair sums. The rows
// kernel must give reduceLanes of the tile's lanes bit for bit.
func TestQ32AVX2KernelsMatchExact(t *testing.T) {
	if !eightBitQ32 {
		t.Skip("the AVX2 q32 x Q8 kernels are not in use on this CPU (no AVX2/FMA/F16C, or the VNNI kernels are)")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, f := range []q32{q32Q8_0, q32Q4_0, q32Q4_1, q32Q5_0, q32Q5_1, q32IQ4_NL} {
		for _, cols := range []int{32, 96, 64 * 5, 32 * 33, 2048} {
			t.Run(fmt.Sprintf("%v/%d", q32Dtypes[f], cols), func(t *testing.T) {
				nb, bb := cols/q8BlockSize, f.blockBytes()
				m := randomMatrix(rng, 3, cols, q32Dtypes[f])
				rb := m.rowBytes()
				require.Equal(t, nb*bb, rb)
				extremeRow(m, f, 2)
				x := make([]float32, 4*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for i := range cols { // input 3: +-1 only, all q = +-127
					x[3*cols+i] = float32([]int{1, -1}[(i/2)%2])
				}
				a := quantizeActs(x, cols, 4, cols)
				defer a.release()
				var start [3 * 4 * q8Lanes]float32
				for i := range start {
					start[i] = float32(rng.NormFloat64())
				}
				// -0 in an even and an odd lane of every output: with one
				// block (cols 32) the odd lanes meet only the zero partner,
				// which makes them +0.
				for i := range 12 {
					start[i*q8Lanes+5] = float32(math.Copysign(0, -1))
					start[i*q8Lanes+11] = float32(math.Copysign(0, -1))
				}

				var want [3 * 4 * q8Lanes]float32
				copy(want[:], start[:])
				for i := range 12 {
					r, tt := i/4, i%4
					q32LanesExact(f, m.q[r*rb:], a.row(tt), nb, (*[q8Lanes]float32)(want[i*q8Lanes:]))
				}

				got := start
				f.tile(m.q, rb, a.buf, a.stride, nb, &got, false)
				requireLanesEqual(t, want[:], got[:], "tile")

				// Chunks: the first 2 blocks from zeros, the rest continued.
				if nb > 2 {
					var chunked, fromZero [3 * 4 * q8Lanes]float32
					for i := range 12 {
						r, tt := i/4, i%4
						q32LanesExact(f, m.q[r*rb:], a.row(tt), 2, (*[q8Lanes]float32)(fromZero[i*q8Lanes:]))
						q32LanesExact(f, m.q[r*rb+2*bb:], a.row(tt)[q8ActPairBytes:], nb-2, (*[q8Lanes]float32)(fromZero[i*q8Lanes:]))
					}
					chunked = start
					f.tile(m.q, rb, a.buf, a.stride, 2, &chunked, true)
					f.tile(m.q[2*bb:], rb, a.buf[q8ActPairBytes:], a.stride, nb-2, &chunked, false)
					requireLanesEqual(t, fromZero[:], chunked[:], "chunked tile")
				}

				var one [q8Lanes]float32
				copy(one[:], start[6*q8Lanes:])
				f.row(m.q[rb:], a.row(2), nb, &one)
				requireLanesEqual(t, want[6*q8Lanes:7*q8Lanes], one[:], "row")

				rows := make([]float32, 3)
				f.rows(m.q, rb, a.row(3), nb, rows)
				for r := range 3 {
					var lanes [q8Lanes]float32
					q32LanesExact(f, m.q[r*rb:], a.row(3), nb, &lanes)
					require.Equal(t, math.Float32bits(reduceLanes(&lanes)), math.Float32bits(rows[r]), "rows kernel, row %d", r)
				}
			})
		}
	}
}

func requireLanesEqual(t *testing.T, want, got []float32, what string) {
	t.Helper()
	for i := range want {
		require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s: output %d lane %d: want %g, got %g", what, i/q8Lanes, i%q8Lanes, want[i], got[i])
	}
}
