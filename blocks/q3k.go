package blocks

import "encoding/binary"

// Q3_K weights times Q8_K activations (q8k.go), as llama.cpp's
// ggml_vec_dot_q3_K_q8_K computes them. A block_q3_K of 256 weights (110
// bytes: hmask [32]byte, qs [64]byte of 2-bit values, 12 bytes of 6-bit
// scales, d f16) holds w = d * (sc_g - 32) * (u - 4) for group g of 16
// (ggml-common.h block_q3_K, dequantize_row_q3_K), where the unsigned
// u = q2 | hbit<<2 (0..7) is, for weight 64c+k of chunk c (half h = c/2,
// pass i = 2(c%2) + k/32, l = k%32),
//
//	u = (qs[32h+l] >> 2i) & 3  |  ((hmask[l] >> (4h+i)) & 1) << 2
//
// This is Q6_K's chunk layout (q6k.go) with 3-bit values and an offset of
// -4: lane j < 16 sums, exact in int32,
//
//	I_j = -4 * (s_2j bsums_2j + s_2j+1 bsums_2j+1)   (j < 8; 0 for j >= 8)
//	    + sum_c s_{4c+j/4} * sum_{k<4} u_{64c+4j+k} q_{64c+4j+k}
//
// with s_g = sc_g - 32, and per block every kernel does, in float32,
//
//	acc[j] = fma(float32(I_j) * d, d_x, acc[j])

// q3KBlockBytes is the bytes of one block_q3_K of 256 weights.
const q3KBlockBytes = 110

// q3KWeight returns u of weight 64c+k of block_q3_K blk (see above).
func q3KWeight(blk []byte, c, k int) int32 {
	h, i, l := c/2, 2*(c%2)+k/32, k%32
	lo := blk[32+32*h+l] >> (2 * i) & 3
	hi := blk[l] >> (4*h + i) & 1
	return int32(lo | hi<<2)
}

// q3_KLanes adds to acc the accumulators of Q3_K row w times the Q8_K
// input a over nsb blocks of 256: the portable kernel.
func q3_KLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) {
	t := f16Table()
	for S := range nsb {
		blk := w[S*q3KBlockBytes : (S+1)*q3KBlockBytes : (S+1)*q3KBlockBytes]
		q, bsums, dx := q8KBlock(a[S*q8KBlockBytes : (S+1)*q8KBlockBytes])
		d := t[binary.LittleEndian.Uint16(blk[108:])]
		sc := q3KScales(blk[96:108])
		var isum [q8Lanes]int32
		for j := range 8 {
			isum[j] = -4 * (int32(sc[2*j])*bsums[2*j] + int32(sc[2*j+1])*bsums[2*j+1])
		}
		for c := range 4 {
			for j := range q8Lanes {
				var l int32
				for k := range 4 {
					l += q3KWeight(blk, c, 4*j+k) * int32(int8(q[64*c+4*j+k]))
				}
				isum[j] += int32(sc[4*c+j/4]) * l
			}
		}
		for j := range q8Lanes {
			acc[j] = fma32(float32(isum[j])*d, dx, acc[j])
		}
	}
}

// dotQ3_KQ8K is the dot product of Q3_K row w with the Q8_K input a (nsb
// blocks of 256): the result every path gives for this row and input.
func dotQ3_KQ8K(w, a []byte, nsb int) float32 {
	var out [1]float32
	q3_KRows(w, 0, a, nsb, out[:])
	return out[0]
}

// q3_KDotGo is the portable dotQ3_KQ8K.
func q3_KDotGo(w, a []byte, nsb int) float32 { return kDotGo(q3_KLanes, w, a, nsb) }

// q3_KTileGo is the portable q3_KTile: q3_KLanes per output.
func q3_KTileGo(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q3_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}
