package blocks

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestQuantizeRowQ8 checks the activation layout against values worked by
// hand: a block whose largest magnitude is 2.54 gets d = 0.02, so 2.54 ->
// 127, -1.27 -> -63.5 -> -64 (ties to even), 0.01 -> 0.5 -> 0; lane sums
// times -128; an all-zero block gets d = 0 and zeros.
func TestQuantizeRowQ8(t *testing.T) {
	x := make([]float32, 64)
	x[0], x[1], x[2], x[5] = 2.54, -1.27, 0.01, 0.3
	dst := make([]byte, 2*q8ActBlockBytes)
	quantizeRowQ8(dst, x)
	q := func(i int) int8 { return int8(dst[i]) }
	require.Equal(t, []int8{127, -64, 0, 0, 0, 15}, []int8{q(0), q(1), q(2), q(3), q(4), q(5)})
	c := func(j int) int32 { return int32(binary.LittleEndian.Uint32(dst[32+4*j:])) }
	require.Equal(t, int32(-128*(127-64)), c(0))
	require.Equal(t, int32(-128*15), c(1))
	require.Equal(t, int32(0), c(2))
	require.InDelta(t, 0.02, math.Float32frombits(binary.LittleEndian.Uint32(dst[64:])), 1e-7)
	for i := q8ActBlockBytes; i < 2*q8ActBlockBytes; i++ {
		require.Zero(t, dst[i], "byte %d of the zero block", i)
	}
}

// TestDotQ8_0Q8 compares the Q8_0 x Q8 product with the float64 sum of the
// dequantized weights times the dequantized activations (tolerance: float32
// rounding of 128 block terms), and with the product of the float32
// activations (tolerance: the 8-bit rounding of the activations).
func TestDotQ8_0Q8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const cols = 4096
	m := randomMatrix(rng, 1, cols, swarm.DTypeQ8_0)
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	a := quantizeActs(x, cols, 1, cols)
	defer a.release()
	w := make([]float32, cols)
	m.rowF32(0, w)
	var exact, unq float64
	for b := range cols / 32 {
		blk := a.row(0)[b*q8ActBlockBytes:]
		d := float64(math.Float32frombits(binary.LittleEndian.Uint32(blk[64:])))
		for i := range 32 {
			exact += float64(w[b*32+i]) * d * float64(int8(blk[i]))
			unq += float64(w[b*32+i]) * float64(x[b*32+i])
		}
	}
	got := float64(dotQ8_0Q8(m.q, a.row(0), cols/32))
	require.InDelta(t, exact, got, 1e-3)
	require.InDelta(t, unq, got, 0.05*math.Sqrt(cols)/8)
}

// TestMulRowsQ8_0MatchesDot requires every value mulRowsQ8_0 gives (3x4
// tiles, 4-row groups, leftovers) to equal dotQ8_0Q8 of its row and input
// bit for bit: a row's result must not depend on the batch.
func TestMulRowsQ8_0MatchesDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, cols := range []int{32, 96, 2048} {
		for _, rows := range []int{1, 5, 13, 30} {
			m := randomMatrix(rng, rows, cols, swarm.DTypeQ8_0)
			for _, n := range []int{1, 3, 4, 9} {
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				a := quantizeActs(x, cols, n, cols)
				out := make([]float32, n*rows)
				m.mulRowsQ8_0(out, a, n, 0, rows)
				rb := m.rowBytes()
				for tt := range n {
					for r := range rows {
						want := dotQ8_0Q8(m.q[r*rb:(r+1)*rb], a.row(tt), cols/32)
						require.Equal(t, math.Float32bits(want), math.Float32bits(out[tt*rows+r]),
							"cols %d rows %d inputs %d: row %d input %d", cols, rows, n, r, tt)
					}
				}
				a.release()
			}
		}
	}
}
