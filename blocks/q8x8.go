package blocks

import "sync"

// Q8_0 rows against float32 inputs in batches, on CPUs whose Q8_0
// products are dotQ8_0AVX2's (AVX2 without the VNNI tiles of q8act.go):
// one row's block is widened to float32 once for 8 inputs
// (q8_0x1x8AVX2; 4 for the inputs left, q8_0x1x4AVX2) instead of once per
// input, with each input's operations
// exactly dotQ8_0AVX2's, so a row's result is the same bit for bit alone
// or in a batch. On a 2-core Zen 3 16 TinyLlama-shaped Q8_0 sessions
// computed row by row cost 14 single steps (tau 3.57 ms per block per step
// at batch 1, 50.2 at batch 16).

// q8x8Tile, where the AVX2 Q8_0 kernels are in use, adds to acc[8*t:8*t+8]
// for the ni (8 or 4) inputs t of x (ldx floats apart) dotQ8_0AVX2's
// accumulator lanes over the blocks Q8_0 blocks of w (q8_0x1x8AVX2,
// q8_0x1x4AVX2); nil elsewhere.
var q8x8Tile func(w []byte, x []float32, ldx, ni, blocks int, acc []float32)

const (
	// q8x8Blocks is the Q8_0 blocks of one call: 16 blocks (512 columns)
	// of 8 inputs are 16 KiB of float32, which stay in a 32 KiB L1 while
	// the tile's rows meet them.
	q8x8Blocks = 16
	// q8x8Rows is the rows of one tile: 16 rows' chunks are 8.5 KiB.
	q8x8Rows = 16
	// q8x8MinInputs is the fewest inputs the tiles take: below it a row's
	// widening is shared too little to beat dotQ8_0 per input.
	q8x8MinInputs = 4
)

// q8x8Scratches recycles the tiles' accumulators: q8x8Rows rows times
// gemmMaxInputs/8 groups of 8 inputs times 8 lanes.
var q8x8Scratches = sync.Pool{New: func() any { return new([q8x8Rows * gemmMaxInputs * 8]float32) }}

// mulRowsQ8x8 is mulRows for a Q8_0 matrix and float32 inputs x [n, ldx]
// (q8x8MinInputs <= n <= gemmMaxInputs) where q8x8Tile is set:
// out[t*m.rows+r] = dotQ8_0 of row r and input t, bit for bit, for r in
// [r0, r1). Tiles of q8x8Rows rows go over the columns q8x8Blocks blocks
// at a time; in each chunk every group of inputs (8 at a time, then 4)
// meets every row. The fewer than 4 inputs left take dotQ8_0.
func (m *matrix) mulRowsQ8x8(out []float32, x []float32, ldx, n, r0, r1 int) {
	rb, nb := m.rowBytes(), m.cols/q8BlockSize
	var sizes []int // inputs of each group
	for t := 0; n-t >= 4; {
		ni := 8
		if n-t < 8 {
			ni = 4
		}
		sizes = append(sizes, ni)
		t += ni
	}
	tiled := 0
	for _, ni := range sizes {
		tiled += ni
	}
	per := 8 * tiled // accumulators of one row
	acc := q8x8Scratches.Get().(*[q8x8Rows * gemmMaxInputs * 8]float32)
	defer q8x8Scratches.Put(acc)
	for a := r0; a < r1; a += q8x8Rows {
		b := min(a+q8x8Rows, r1)
		clear(acc[:(b-a)*per])
		for c := 0; c < nb; c += q8x8Blocks {
			k := min(q8x8Blocks, nb-c)
			t0 := 0
			for _, ni := range sizes {
				xg := x[t0*ldx+c*q8BlockSize:]
				for r := a; r < b; r++ {
					q8x8Tile(m.q[r*rb+c*q8BlockBytes:], xg, ldx, ni, k, acc[(r-a)*per+8*t0:])
				}
				t0 += ni
			}
		}
		for r := a; r < b; r++ {
			s := acc[(r-a)*per:]
			for t := range tiled {
				out[t*m.rows+r] = reduceQ8AVX2Lanes(s[8*t : 8*t+8])
			}
			for t := tiled; t < n; t++ {
				out[t*m.rows+r] = m.dotRow(r, x[t*ldx:])
			}
		}
	}
}

// reduceQ8AVX2Lanes is dotQ8_0AVX2's REDUCE of one accumulator: the zero
// accumulators Y1-Y3 added first (which turns a -0 lane into +0), then
// reduce8.
func reduceQ8AVX2Lanes(a []float32) float32 {
	var l [8]float32
	for j := range l {
		l[j] = (a[j] + 0) + (0 + 0)
	}
	return reduce8(l[:])
}
