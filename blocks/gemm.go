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

// gemmTile computes out[t*outRows + r0 + r] = rows[r] · x[t] for the nr
// float32 rows of rows (stride cols) and the first n inputs of x (stride
// cols), with gemmF32x3x4 for whole groups of 3 rows and 4 inputs and
// dotF32x2/dotF32 for the rest: every value bit for bit what dotF32 gives.
// cols must be a multiple of 32 and gemmF32x3x4 not nil.
func gemmTile(out []float32, outRows, r0 int, rows []float32, nr int, x []float32, n, cols int) {
	var acc [gemmAcc]float32
	t := 0
	for ; t+gemmInputs <= n; t += gemmInputs {
		xt := x[t*cols:]
		r := 0
		for ; r+gemmRows <= nr; r += gemmRows {
			clear(acc[:])
			gemmF32x3x4(rows[r*cols:], cols, xt, cols, cols/32, &acc)
			for rr := range gemmRows {
				for tt := range gemmInputs {
					out[(t+tt)*outRows+r0+r+rr] = reduceAcc(&acc, rr*gemmInputs+tt)
				}
			}
		}
		for ; r < nr; r++ {
			row := rows[r*cols : (r+1)*cols]
			for tt := 0; tt < gemmInputs; tt += 2 {
				out[(t+tt)*outRows+r0+r], out[(t+tt+1)*outRows+r0+r] = dotF32x2(row, x[(t+tt)*cols:(t+tt+1)*cols], x[(t+tt+1)*cols:(t+tt+2)*cols])
			}
		}
	}
	for ; t+2 <= n; t += 2 {
		x0, x1 := x[t*cols:(t+1)*cols], x[(t+1)*cols:(t+2)*cols]
		for r := range nr {
			out[t*outRows+r0+r], out[(t+1)*outRows+r0+r] = dotF32x2(rows[r*cols:(r+1)*cols], x0, x1)
		}
	}
	if t < n {
		xt := x[t*cols : (t+1)*cols]
		for r := range nr {
			out[t*outRows+r0+r] = dotF32(rows[r*cols:(r+1)*cols], xt)
		}
	}
}
