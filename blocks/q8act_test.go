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
// times -128; d eight times per block, rounded to binary16 as llama.cpp
// stores it (0.02 -> 1.2802734375 * 2^-6, 1/127 -> 1.0078125 * 2^-7); an
// all-zero block gets zeros, and the odd third block's partner stays zero.
// A d beyond binary16's range (1e7 / 127) stays float32.
func TestQuantizeRowQ8(t *testing.T) {
	x := make([]float32, 96)
	x[0], x[1], x[2], x[5] = 2.54, -1.27, 0.01, 0.3
	x[64] = -1 // block 2: d = 1/127, q = -127
	dst := make([]byte, 2*q8ActPairBytes)
	for i := range dst {
		dst[i] = 0xff // quantizeRowQ8 must write every byte of the last pair
	}
	quantizeRowQ8(dst, x)
	q := func(i int) int8 { return int8(dst[i]) }
	require.Equal(t, []int8{127, -64, 0, 0, 0, 15}, []int8{q(0), q(1), q(2), q(3), q(4), q(5)})
	c := func(p, j int) int32 { return int32(binary.LittleEndian.Uint32(dst[p*q8ActPairBytes+64+4*j:])) }
	require.Equal(t, int32(-128*(127-64)), c(0, 0))
	require.Equal(t, int32(-128*15), c(0, 1))
	require.Equal(t, int32(0), c(0, 2))
	d := func(p, j int) float32 {
		return math.Float32frombits(binary.LittleEndian.Uint32(dst[p*q8ActPairBytes+128+4*j:]))
	}
	for j := range 8 {
		require.Equal(t, float32(0.0200042724609375), d(0, j), "d of block 0, copy %d", j)
		require.Zero(t, d(0, 8+j), "d of the zero block 1")
		require.Equal(t, float32(0.00787353515625), d(1, j), "d of block 2")
		require.Zero(t, d(1, 8+j), "d of block 2's zero partner")
		require.Zero(t, c(1, 8+j), "c of block 2's zero partner")
	}
	require.Equal(t, int8(-127), int8(dst[q8ActPairBytes]))
	require.Equal(t, int32(-128*-127), c(1, 0))
	for i := 32; i < 64; i++ {
		require.Zero(t, dst[i], "q byte %d of the zero block", i)
		require.Zero(t, dst[q8ActPairBytes+i], "q byte %d of the zero partner", i)
	}
	big := make([]float32, 32)
	big[3] = 1e7
	quantizeRowQ8(dst, big)
	require.Equal(t, float32(1e7)/127, d(0, 0), "d over binary16's range")
	require.Equal(t, int8(127), q(3))
}

// TestDotQ8_0Q8 compares the Q8_0 x Q8 product with the float64 sum of the
// dequantized weights times the dequantized activations (tolerance: float32
// rounding of 128 block terms), and with the product of the float32
// activations (tolerance: the 8-bit rounding of the activations).
func TestDotQ8_0Q8(t *testing.T) {
	for _, dt := range []swarm.DType{swarm.DTypeQ8_0, swarm.DTypeQ4_0, swarm.DTypeQ4_1, swarm.DTypeQ5_0, swarm.DTypeQ5_1, swarm.DTypeIQ4_NL} {
		t.Run(dt.String(), func(t *testing.T) { dotQ8Acts(t, dt) })
	}
}

func dotQ8Acts(t *testing.T, dt swarm.DType) {
	rng := rand.New(rand.NewPCG(7, 8))
	const cols = 4096
	m := randomMatrix(rng, 1, cols, dt)
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
		pair, h := a.row(0)[(b/2)*q8ActPairBytes:], b%2
		d := float64(math.Float32frombits(binary.LittleEndian.Uint32(pair[128+32*h:])))
		for i := range 32 {
			exact += float64(w[b*32+i]) * d * float64(int8(pair[32*h+i]))
			unq += float64(w[b*32+i]) * float64(x[b*32+i])
		}
	}
	got := float64(q8Dtypes[dt].dot(m.q, a.row(0), cols/32))
	require.InDelta(t, exact, got, 1e-3)
	require.InDelta(t, unq, got, 0.05*math.Sqrt(cols)/8)
}

// TestMulRowsQ8MatchesDot requires every value mulRowsQ8 gives (3x4
// tiles over column chunks, with an odd last block, more than 64 inputs,
// leftovers) to equal the one-output product of its row and input bit for
// bit, for every dtype of q8Dtypes: a row's result must not depend on the
// batch.
func TestMulRowsQ8MatchesDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		dt   swarm.DType
		cols []int
	}{
		{swarm.DTypeQ8_0, []int{32, 64, 96, 1056, 2048}},
		{swarm.DTypeQ4_0, []int{32, 96, 1056, 2048}},
		{swarm.DTypeQ4_1, []int{32, 96, 1056}},
		{swarm.DTypeQ5_0, []int{32, 96, 1056}},
		{swarm.DTypeQ5_1, []int{32, 96, 1056}},
		{swarm.DTypeIQ4_NL, []int{32, 96, 1056}},
		{swarm.DTypeQ4_K, []int{256, 512, 1280, 2048}}, // 1280: a chunk of 4 blocks of 256, then 1
		{swarm.DTypeQ5_K, []int{256, 1280}},
		{swarm.DTypeQ3_K, []int{256, 1280}},
		{swarm.DTypeQ2_K, []int{256, 1280}},
		{swarm.DTypeQ6_K, []int{256, 1280}},
		{swarm.DTypeIQ4_XS, []int{256, 1280}},
	} {
		k := q8Dtypes[tc.dt]
		for _, cols := range tc.cols {
			for _, rows := range []int{1, 5, 13, 30} {
				m := randomMatrix(rng, rows, cols, tc.dt)
				ns := []int{1, 3, 4, 9, 13, 25} // K-quants: groups of 12 and fewer
				if cols == tc.cols[0] {
					ns = append(ns, 70) // more inputs than one pass of tiles takes
				}
				for _, n := range ns {
					x := make([]float32, n*cols)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					a := k.acts.quantize(x, cols, n, cols)
					out := make([]float32, n*rows)
					m.mulRowsQ8(out, a, n, 0, rows, k)
					rb, units := m.rowBytes(), cols/32/k.unitBlocks
					for tt := range n {
						for r := range rows {
							want := k.dot(m.q[r*rb:(r+1)*rb], a.row(tt), units)
							require.Equal(t, math.Float32bits(want), math.Float32bits(out[tt*rows+r]),
								"%s: cols %d rows %d inputs %d: row %d input %d", tc.dt, cols, rows, n, r, tt)
						}
					}
					a.release()
				}
			}
		}
	}
}

// TestDotK8 compares the Q4_K and Q6_K x Q8_K products with the float64
// sum of the dequantized weights times the dequantized activations
// (tolerance: float32 rounding over 8 blocks), and with the product of the
// float32 activations (tolerance: the 8-bit rounding of the activations).
func TestDotK8(t *testing.T) {
	for _, dt := range []swarm.DType{swarm.DTypeQ2_K, swarm.DTypeQ3_K, swarm.DTypeQ4_K, swarm.DTypeQ5_K, swarm.DTypeQ6_K, swarm.DTypeIQ4_XS} {
		t.Run(dt.String(), func(t *testing.T) { dotK8(t, dt) })
	}
}

func dotK8(t *testing.T, dt swarm.DType) {
	rng := rand.New(rand.NewPCG(13, 14))
	const cols = 2048
	for range 20 {
		m := randomMatrix(rng, 1, cols, dt)
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		a := quantizeActsK(x, cols, 1, cols)
		w := make([]float32, cols)
		m.rowF32(0, w)
		// variance: each activation's rounding error is uniform in
		// [-d/2, d/2] (variance d^2/12), times its weight.
		var exact, unq, variance float64
		for S := range cols / 256 {
			q, _, d := q8KBlock(a.row(0)[S*q8KBlockBytes:])
			for i := range 256 {
				wi := float64(w[S*256+i])
				exact += wi * float64(d) * float64(int8(q[i]))
				unq += wi * float64(x[S*256+i])
				variance += wi * wi * float64(d) * float64(d) / 12
			}
		}
		got := float64(q8Dtypes[dt].dot(m.q, a.row(0), cols/256))
		require.InDelta(t, exact, got, 1e-4*(1+math.Abs(exact)))
		require.InDelta(t, unq, got, 5*math.Sqrt(variance), "five standard deviations of the activations' rounding")
		a.release()
	}
}

// TestQuantizeRowQ8K checks the Q8_K layout against values worked by
// hand: a block whose largest magnitude is 2.54 gets d = 0.02, so 2.54 ->
// 127, -1.27 -> -63.5 -> -64 (ties to even), 0.01 -> 0.5 -> 0, 0.3 -> 15;
// group sums of 16; an all-zero second block gets zeros.
func TestQuantizeRowQ8K(t *testing.T) {
	x := make([]float32, 512)
	x[0], x[1], x[2], x[17], x[255] = 2.54, -1.27, 0.01, 0.3, -0.3
	dst := make([]byte, 2*q8KBlockBytes)
	for i := range dst {
		dst[i] = 0xff // quantizeRowQ8K must write every byte
	}
	quantizeRowQ8K(dst, x)
	q, bsums, d := q8KBlock(dst)
	require.InDelta(t, 0.02, d, 1e-7)
	require.Equal(t, []int8{127, -64, 0}, []int8{int8(q[0]), int8(q[1]), int8(q[2])})
	require.Equal(t, int8(15), int8(q[17]))
	require.Equal(t, int8(-15), int8(q[255]))
	require.Equal(t, [16]int32{127 - 64, 15, 13: 0, 15: -15}, bsums)
	for i := 292; i < q8KBlockBytes; i++ {
		require.Zero(t, dst[i], "padding byte %d", i)
	}
	q, bsums, d = q8KBlock(dst[q8KBlockBytes:])
	require.Zero(t, d)
	require.Equal(t, [16]int32{}, bsums)
	for i := range 256 {
		require.Zero(t, q[i], "q byte %d of the zero block", i)
	}
}

// TestEveryQuantizedTypeTakesEightBitActivations is a rule: every
// quantized GGML type the loader accepts (ggmlDTypes) has 8-bit-activation
// kernels (q8Dtypes), so that no quantized matrix of a file falls back to
// the float32 path on a VNNI CPU (where that path was 3-25x slower for
// the types that lacked them), and its block bytes are the dtype's.
func TestEveryQuantizedTypeTakesEightBitActivations(t *testing.T) {
	for g, dt := range ggmlDTypes {
		switch dt {
		case swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16:
			continue
		}
		k := q8Dtypes[dt]
		require.NotNil(t, k, "GGML type %v (%v) has no 8-bit-activation kernels in q8Dtypes", g, dt)
		units := int64(k.unitBlocks * q8BlockSize)
		require.Equal(t, dt.Bytes(units), int64(k.unitBytes), "%v: bytes of a unit of %d weights", dt, units)
	}
}
