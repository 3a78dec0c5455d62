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

// q8_0LanesExact is q8_0Lanes (lanes32's steps for Q8_0 rows) with every
// fused multiply-add rounded once: the integer lane sum from the bytes,
// float32(sum) times (dw * dx) added to accumulator 8*(b%2)+j in block
// order, and an odd last block's zero partner adding 0 * 0.
func q8_0LanesExact(w, a []byte, nb int, acc *[q8Lanes]float32) {
	t := f16Table()
	for b := range q8Pairs(nb) * 2 {
		pair, h := a[(b/2)*q8ActPairBytes:], b%2
		if b == nb {
			for j := range 8 {
				acc[8+j] = fma32Exact(0, 0, acc[8+j])
			}
			break
		}
		wb := w[b*q8BlockBytes:]
		dx := math.Float32frombits(binary.LittleEndian.Uint32(pair[128+32*h:]))
		s := t[binary.LittleEndian.Uint16(wb)] * dx
		for j := range 8 {
			var l int32
			for k := range 4 {
				l += int32(int8(wb[2+4*j+k])) * int32(int8(pair[32*h+4*j+k]))
			}
			acc[8*h+j] = fma32Exact(float32(l), s, acc[8*h+j])
		}
	}
}

// TestQ8_0AVX2KernelsMatchExact requires the AVX2 Q8_0 x Q8 kernels (the
// 3x4 tile, the one-row kernel and the rows kernel) to leave every
// accumulator exactly as q8_0LanesExact does, from non-zero accumulators
// and across calls over consecutive chunks of blocks (as mulRowsQ8 makes
// them), for even and odd block counts; rows with weights of -128 and
// +127 and inputs whose blocks quantize to +-127 reach VPMADDUBSW's
// largest pair sums. The rows kernel must give reduceLanes of the tile's
// lanes bit for bit.
func TestQ8_0AVX2KernelsMatchExact(t *testing.T) {
	if !eightBitQ8_0 {
		t.Skip("the AVX2 Q8_0 x Q8 kernels are not in use on this CPU (no AVX2/FMA/F16C, or the VNNI kernels are)")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, cols := range []int{32, 96, 64 * 5, 32 * 33, 2048} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			nb := cols / q8BlockSize
			m := randomMatrix(rng, 3, cols, swarm.DTypeQ8_0)
			rb := m.rowBytes()
			for b := range nb { // row 2: extreme weights, scale 1
				blk := m.q[2*rb+b*q8BlockBytes:]
				binary.LittleEndian.PutUint16(blk, f32ToF16(1))
				for e := range 32 {
					blk[2+e] = []byte{0x80, 0x7f}[(e/2)%2]
				}
			}
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
				q8_0LanesExact(m.q[r*rb:], a.row(tt), nb, (*[q8Lanes]float32)(want[i*q8Lanes:]))
			}

			got := start
			q32Q8_0.tile(m.q, rb, a.buf, a.stride, nb, &got, false)
			requireLanesEqual(t, want[:], got[:], "tile")

			// Chunks: the first 2 blocks from zeros, the rest continued.
			if nb > 2 {
				var chunked, fromZero [3 * 4 * q8Lanes]float32
				for i := range 12 {
					r, tt := i/4, i%4
					q8_0LanesExact(m.q[r*rb:], a.row(tt), 2, (*[q8Lanes]float32)(fromZero[i*q8Lanes:]))
					q8_0LanesExact(m.q[r*rb+2*q8BlockBytes:], a.row(tt)[q8ActPairBytes:], nb-2, (*[q8Lanes]float32)(fromZero[i*q8Lanes:]))
				}
				chunked = start
				q32Q8_0.tile(m.q, rb, a.buf, a.stride, 2, &chunked, true)
				q32Q8_0.tile(m.q[2*q8BlockBytes:], rb, a.buf[q8ActPairBytes:], a.stride, nb-2, &chunked, false)
				requireLanesEqual(t, fromZero[:], chunked[:], "chunked tile")
			}

			var one [q8Lanes]float32
			copy(one[:], start[6*q8Lanes:])
			q32Q8_0.row(m.q[rb:], a.row(2), nb, &one)
			requireLanesEqual(t, want[6*q8Lanes:7*q8Lanes], one[:], "row")

			rows := make([]float32, 3)
			q32Q8_0.rows(m.q, rb, a.row(3), nb, rows)
			for r := range 3 {
				var lanes [q8Lanes]float32
				q8_0LanesExact(m.q[r*rb:], a.row(3), nb, &lanes)
				require.Equal(t, math.Float32bits(reduceLanes(&lanes)), math.Float32bits(rows[r]), "rows kernel, row %d", r)
			}
		})
	}
}

func requireLanesEqual(t *testing.T, want, got []float32, what string) {
	t.Helper()
	for i := range want {
		require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s: output %d lane %d: want %g, got %g", what, i/q8Lanes, i%q8Lanes, want[i], got[i])
	}
}
