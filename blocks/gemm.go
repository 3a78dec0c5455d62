package blocks

import "sync"

// gemmAcc is the accumulator block of gemmF32x3x4: 4 accumulators of 8
// lanes for each of 3 rows times 4 inputs.
const gemmAcc = 4 * 3 * 4 * 8

// gemmRows and gemmInputs are the rows and inputs of one gemmF32x3x4 call.
const (
	gemmRows   = 3
	gemmInputs = 4
)

// reduceAcc sums the four 8-lane accumulators of output i (= r*4+t) of acc
// to one float32 exactly as the assembly dotF32AVX2 does (its REDUCE: add
// the accumulators pairwise, fold the upper 128 bits onto the lower, then
// two horizontal adds).
func reduceAcc(acc *[gemmAcc]float32, i int) float32 {
	var s [8]float32
	for j := range s {
		a0, a1 := acc[0*96+i*8+j], acc[1*96+i*8+j]
		a2, a3 := acc[2*96+i*8+j], acc[3*96+i*8+j]
		s[j] = (a0 + a1) + (a2 + a3)
	}
	u0, u1, u2, u3 := s[0]+s[4], s[1]+s[5], s[2]+s[6], s[3]+s[7]
	return (u0 + u1) + (u2 + u3)
}

// gemmChunkBlocks is the 32-element blocks of one kernel call: the
// columns are done in chunks of 1024 so that the tile's 12 rows and a
// call's 4 inputs (24 KiB of binary16 + 16 KiB of float32) stay in the L1
// cache while the tile's other row groups and inputs reuse them (measured
// by BenchmarkMulRowsF16: 512 and 2048 were slower). Splitting a row's sum into
// chunks does not change it: the accumulators carry over between calls.
const gemmChunkBlocks = 32

// gemmPairChunkBlocks is gemmChunkBlocks for the 6-row kernel
// (gemmF16x6x4), whose calls go over all the inputs for one pair of row
// groups: the pair's chunk (6 rows of 2048 binary16, 24 KiB) stays in L1
// for every input while the inputs come from L2, each load serving 6
// rows. Measured with BenchmarkMulRowsF16 ([4096, 4096], one goroutine,
// GFLOP/s at 16 / 64 inputs): 3x4 kernel, inputs outer, 1024 columns
// 119-127 / 140; 6x4, pairs outer: 1024 columns 137-140 / 157-162, 2048
// 145-147 / 166-167, 4096 130-132 / 141-145.
const gemmPairChunkBlocks = 64

// gemmMaxInputs is the most inputs one gemmTile call takes: its
// accumulators (gemmMaxInputs/4 groups of inputs times prefillTile/3 groups
// of rows, 1.5 KiB each) and its inputs' chunk (64 x 2 KiB) stay in L2.
const gemmMaxInputs = 64

// gemmScratch is what one gemmTile call works in: the accumulators of its
// groups of rows and inputs, and one group of inputs' reduced sums (kept
// here, not on the stack, because reduce3x4 is a function value and would
// move them to the heap on every call).
type gemmScratch struct {
	// accs holds accumulator blocks of gemmAcc values, row group g and
	// inputs group tg at block tg*groups+g, so that the blocks of groups g
	// and g+1 are adjacent for gemmF16x6x4.
	accs [prefillTile / gemmRows * gemmMaxInputs / gemmInputs * gemmAcc]float32
	sums [prefillTile / gemmRows][gemmRows * gemmInputs]float32
}

// gemmScratches recycles the scratch of gemmTile calls.
var gemmScratches = sync.Pool{New: func() any { return new(gemmScratch) }}

// reduce3x4 writes to out[i] reduceAcc(acc, i) for the 12 outputs of a
// 3x4 group: the same values, in assembly where the GEMM kernels are.
var reduce3x4 = func(acc *[gemmAcc]float32, out *[gemmRows * gemmInputs]float32) {
	for i := range out {
		out[i] = reduceAcc(acc, i)
	}
}

// tileRows is a tile of nr weight rows as gemmTile reads them: group adds
// to acc the partial sums of rows r..r+2 times the 4 inputs at x (stride
// cols) over the blocks [b0, b0+nb) of 32 columns (gemmF32x3x4 or
// gemmF16x3x4), dot2 and dot are the row's dot products with one or two
// inputs, all summed the same way.
type tileRows struct {
	nr, cols int
	ldx      int // the stride of the inputs, >= cols
	group    func(r, b0, nb int, x []float32, acc *[gemmAcc]float32)
	dot2     func(r int, x0, x1 []float32) (float32, float32)
	dot      func(r int, x []float32) float32
	// w16 is the binary16 rows of an f16Tile, which gemmF16x6x4 (where
	// gemm6x4) takes 6 at a time: what group gives for rows r..r+2 and
	// r+3..r+5, bit for bit.
	w16 []uint16
}

// f32Tile is the float32 rows [nr, cols] of rows, for inputs ldx apart.
func f32Tile(rows []float32, nr, cols, ldx int) tileRows {
	return tileRows{
		nr: nr, cols: cols, ldx: ldx,
		group: func(r, b0, nb int, x []float32, acc *[gemmAcc]float32) {
			gemmF32x3x4(rows[r*cols+32*b0:], cols, x[32*b0:], ldx, nb, acc)
		},
		dot2: func(r int, x0, x1 []float32) (float32, float32) { return dotF32x2(rows[r*cols:(r+1)*cols], x0, x1) },
		dot:  func(r int, x []float32) float32 { return dotF32(rows[r*cols:(r+1)*cols], x) },
	}
}

// f16Tile is the binary16 rows [nr, cols] of w, widened in the kernels,
// for inputs ldx apart.
func f16Tile(w []uint16, nr, cols, ldx int) tileRows {
	dot := func(r int, x []float32) float32 { return dotF16(w[r*cols:(r+1)*cols], x) }
	return tileRows{
		nr: nr, cols: cols, ldx: ldx, w16: w,
		group: func(r, b0, nb int, x []float32, acc *[gemmAcc]float32) {
			gemmF16x3x4(w[r*cols+32*b0:], cols, x[32*b0:], ldx, nb, acc)
		},
		dot2: func(r int, x0, x1 []float32) (float32, float32) { return dot(r, x0), dot(r, x1) },
		dot:  dot,
	}
}

// gemmTile computes out[t*outRows + r0 + r] = row r · x[t] for the rows of
// tile (at most prefillTile) and the first n inputs of x (stride cols),
// with gemmF16x6x4 for pairs of groups of 3 rows and 4 inputs (binary16
// rows, where gemm6x4: each pair over all the inputs in turn,
// gemmPairChunkBlocks*32 columns at a time), tile.group for the other
// whole groups (each group of inputs over all the groups in turn,
// gemmChunkBlocks*32 columns at a time), gemmMaxInputs inputs at a time,
// and tile.dot2/dot for the rest: every value bit for bit what the row's
// dot product gives alone. cols must be a multiple of 32 and the GEMM
// kernels not nil.
func gemmTile(out []float32, outRows, r0 int, tile tileRows, x []float32, n int) {
	nr, cols, ldx := tile.nr, tile.cols, tile.ldx
	groups := nr / gemmRows
	if groups > 0 && n >= gemmInputs {
		scratch := gemmScratches.Get().(*gemmScratch)
		defer gemmScratches.Put(scratch)
		accs, sums := &scratch.accs, &scratch.sums
		blocks := cols / 32
		acc := func(i int) *[gemmAcc]float32 { return (*[gemmAcc]float32)(accs[i*gemmAcc:]) }
		pairs := tile.w16 != nil && gemm6x4
		chunk := gemmChunkBlocks
		if pairs {
			chunk = gemmPairChunkBlocks
		}
		for t0 := 0; t0+gemmInputs <= n; t0 += gemmMaxInputs {
			tgroups := min(n-t0, gemmMaxInputs) / gemmInputs
			clear(accs[:groups*tgroups*gemmAcc])
			for b0 := 0; b0 < blocks; b0 += chunk {
				nb := min(chunk, blocks-b0)
				g0 := 0 // the first group not done in pairs
				if pairs {
					g0 = groups / 2 * 2
					for g := 0; g < g0; g += 2 {
						for tg := range tgroups {
							xt := x[(t0+tg*gemmInputs)*ldx:]
							gemmF16x6x4(tile.w16[g*gemmRows*cols+32*b0:], cols, xt[32*b0:], ldx, nb, (*[2 * gemmAcc]float32)(accs[(tg*groups+g)*gemmAcc:]))
						}
					}
				}
				for tg := range tgroups {
					xt := x[(t0+tg*gemmInputs)*ldx:]
					for g := g0; g < groups; g++ {
						tile.group(g*gemmRows, b0, nb, xt, acc(tg*groups+g))
					}
				}
			}
			for tg := range tgroups {
				for g := range groups {
					reduce3x4(acc(tg*groups+g), &sums[g])
				}
				// Each input's outputs together (see mulRowsQ8).
				for tt := range gemmInputs {
					o := out[(t0+tg*gemmInputs+tt)*outRows+r0 : (t0+tg*gemmInputs+tt)*outRows+r0+gemmRows*groups]
					for g := range groups {
						for rr := range gemmRows {
							o[gemmRows*g+rr] = sums[g][rr*gemmInputs+tt]
						}
					}
				}
			}
		}
	}
	// The rows left over after whole groups of 3, for the inputs done in
	// groups of 4; then every row for the inputs left over.
	nt := n / gemmInputs * gemmInputs
	if groups == 0 {
		nt = 0
	}
	for r := groups * gemmRows; r < nr && nt > 0; r++ {
		for t := 0; t < nt; t += 2 {
			out[t*outRows+r0+r], out[(t+1)*outRows+r0+r] = tile.dot2(r, x[t*ldx:t*ldx+cols], x[(t+1)*ldx:(t+1)*ldx+cols])
		}
	}
	t := nt
	for ; t+2 <= n; t += 2 {
		x0, x1 := x[t*ldx:t*ldx+cols], x[(t+1)*ldx:(t+1)*ldx+cols]
		for r := range nr {
			out[t*outRows+r0+r], out[(t+1)*outRows+r0+r] = tile.dot2(r, x0, x1)
		}
	}
	if t < n {
		xt := x[t*ldx : t*ldx+cols]
		for r := range nr {
			out[t*outRows+r0+r] = tile.dot(r, xt)
		}
	}
}
