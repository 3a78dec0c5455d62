package blocks

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

// tileRows is a tile of nr weight rows as gemmTile reads them: group adds
// to acc the partial sums of rows r..r+2 times the 4 inputs at x (stride
// cols) (gemmF32x3x4 or gemmF16x3x4), dot2 and dot are the row's dot
// products with one or two inputs, all summed the same way.
type tileRows struct {
	nr, cols int
	group    func(r int, x []float32, acc *[gemmAcc]float32)
	dot2     func(r int, x0, x1 []float32) (float32, float32)
	dot      func(r int, x []float32) float32
}

// f32Tile is the float32 rows [nr, cols] of rows.
func f32Tile(rows []float32, nr, cols int) tileRows {
	return tileRows{
		nr: nr, cols: cols,
		group: func(r int, x []float32, acc *[gemmAcc]float32) {
			gemmF32x3x4(rows[r*cols:], cols, x, cols, cols/32, acc)
		},
		dot2: func(r int, x0, x1 []float32) (float32, float32) { return dotF32x2(rows[r*cols:(r+1)*cols], x0, x1) },
		dot:  func(r int, x []float32) float32 { return dotF32(rows[r*cols:(r+1)*cols], x) },
	}
}

// f16Tile is the binary16 rows [nr, cols] of w, widened in the kernels.
func f16Tile(w []uint16, nr, cols int) tileRows {
	dot := func(r int, x []float32) float32 { return dotF16(w[r*cols:(r+1)*cols], x) }
	return tileRows{
		nr: nr, cols: cols,
		group: func(r int, x []float32, acc *[gemmAcc]float32) {
			gemmF16x3x4(w[r*cols:], cols, x, cols, cols/32, acc)
		},
		dot2: func(r int, x0, x1 []float32) (float32, float32) { return dot(r, x0), dot(r, x1) },
		dot:  dot,
	}
}

// gemmTile computes out[t*outRows + r0 + r] = row r · x[t] for the rows of
// tile and the first n inputs of x (stride cols), with tile.group for whole
// groups of 3 rows and 4 inputs and tile.dot2/dot for the rest: every value
// bit for bit what the row's dot product gives alone. cols must be a
// multiple of 32 and the GEMM kernels not nil.
func gemmTile(out []float32, outRows, r0 int, tile tileRows, x []float32, n int) {
	var acc [gemmAcc]float32
	nr, cols := tile.nr, tile.cols
	t := 0
	for ; t+gemmInputs <= n; t += gemmInputs {
		r := 0
		for ; r+gemmRows <= nr; r += gemmRows {
			clear(acc[:])
			tile.group(r, x[t*cols:], &acc)
			for rr := range gemmRows {
				for tt := range gemmInputs {
					out[(t+tt)*outRows+r0+r+rr] = reduceAcc(&acc, rr*gemmInputs+tt)
				}
			}
		}
		for ; r < nr; r++ {
			for tt := 0; tt < gemmInputs; tt += 2 {
				out[(t+tt)*outRows+r0+r], out[(t+tt+1)*outRows+r0+r] = tile.dot2(r, x[(t+tt)*cols:(t+tt+1)*cols], x[(t+tt+1)*cols:(t+tt+2)*cols])
			}
		}
	}
	for ; t+2 <= n; t += 2 {
		x0, x1 := x[t*cols:(t+1)*cols], x[(t+1)*cols:(t+2)*cols]
		for r := range nr {
			out[t*outRows+r0+r], out[(t+1)*outRows+r0+r] = tile.dot2(r, x0, x1)
		}
	}
	if t < n {
		xt := x[t*cols : (t+1)*cols]
		for r := range nr {
			out[t*outRows+r0+r] = tile.dot(r, xt)
		}
	}
}
