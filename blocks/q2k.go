package blocks

import "encoding/binary"

// Q2_K weights times Q8_K activations (q8k.go), as llama.cpp's
// ggml_vec_dot_q2_K_q8_K computes them. A block_q2_K of 256 weights (84
// bytes: 16 scale bytes, qs [64]byte of 2-bit values, d and dmin f16)
// holds w = d * sc_g * u - dmin * m_g for group g of 16, sc_g and m_g the
// low and high nibbles of scales[g] (ggml-common.h block_q2_K,
// dequantize_row_q2_K). Weight 64c+k of chunk c (half h = c/2, pass
// i = 2(c%2) + k/32, l = k%32) is u = (qs[32h+l] >> 2i) & 3: Q3_K's chunk
// layout (q3k.go) without the high bit. Lane j < 16 sums, exact in int32,
//
//	I_j = sum_c sc_{4c+j/4} * sum_{k<4} u_{64c+4j+k} q_{64c+4j+k}
//	M_j = m_2j bsums_2j + m_2j+1 bsums_2j+1   (j < 8; 0 for j >= 8)
//
// and per block every kernel does, in float32, Q4_K's steps (q4k.go):
//
//	f      = float32(I_j) * d
//	f      = fma(float32(M_j), -dmin, f)
//	acc[j] = fma(f, d_x, acc[j])

// q2KBlockBytes is the bytes of one block_q2_K of 256 weights.
const q2KBlockBytes = 84

// q2_KLanes adds to acc the accumulators of Q2_K row w times the Q8_K
// input a over nsb blocks of 256: the portable kernel.
func q2_KLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) {
	t := f16Table()
	for S := range nsb {
		blk := w[S*q2KBlockBytes : (S+1)*q2KBlockBytes : (S+1)*q2KBlockBytes]
		q, bsums, dx := q8KBlock(a[S*q8KBlockBytes : (S+1)*q8KBlockBytes])
		d, dmin := t[binary.LittleEndian.Uint16(blk[80:])], t[binary.LittleEndian.Uint16(blk[82:])]
		sc := func(g int) int32 { return int32(blk[g] & 15) }
		m := func(g int) int32 { return int32(blk[g] >> 4) }
		var isum, imin [q8Lanes]int32
		for c := range 4 {
			h := c / 2
			for j := range q8Lanes {
				var l int32
				for k := range 4 {
					e := 4*j + k // weight 64c+e
					i := 2*(c%2) + e/32
					l += int32(blk[16+32*h+e%32]>>(2*i)&3) * int32(int8(q[64*c+e]))
				}
				isum[j] += sc(4*c+j/4) * l
			}
		}
		for j := range 8 {
			imin[j] = m(2*j)*bsums[2*j] + m(2*j+1)*bsums[2*j+1]
		}
		for j := range q8Lanes {
			f := float32(isum[j]) * d
			f = fma32(float32(imin[j]), -dmin, f)
			acc[j] = fma32(f, dx, acc[j])
		}
	}
}

// dotQ2_KQ8K is the dot product of Q2_K row w with the Q8_K input a (nsb
// blocks of 256): the result every path gives for this row and input.
func dotQ2_KQ8K(w, a []byte, nsb int) float32 {
	var out [1]float32
	q2_KRows(w, 0, a, nsb, out[:])
	return out[0]
}

// q2_KDotGo is the portable dotQ2_KQ8K.
func q2_KDotGo(w, a []byte, nsb int) float32 { return kDotGo(q2_KLanes, w, a, nsb) }

// q2_KTileGo is the portable q2_KTile: q2_KLanes per output.
func q2_KTileGo(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q2_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}
