package blocks

import (
	"encoding/binary"
)

// Q6_K weights times Q8_K activations (q8k.go), as llama.cpp's
// ggml_vec_dot_q6_K_q8_K computes them. A block_q6_K of 256 weights (210
// bytes: ql [128] low 4 bits, qh [64] high 2 bits, 16 int8 scales, d f16)
// holds w = d*sc_g*(u - 32) with u the 6-bit value and sc_g the scale of
// weights 16g..16g+15 (ggml-common.h block_q6_K, ggml-quants.c
// dequantize_row_q6_K). Chunk c of the block (64 weights, half n = c/2,
// part p = c%2) has, for k < 64,
//
//	u_{64c+k} = (ql[64n+k] >> 4p) & 15  |  ((qh[32n + k%32] >> (4p + 2(k/32))) & 3) << 4
//
// against activations q[64c:64c+64]. Lane j < 16 (bytes 4j..4j+3 of a
// chunk) sums, exact in int32,
//
//	I_j = -32 * (sc_2j bsums_2j + sc_2j+1 bsums_2j+1)   (j < 8; 0 for j >= 8)
//	    + sum_c sc_{4c+j/4} * sum_{k<4} u_{64c+4j+k} q_{64c+4j+k}
//
// (the -32 of every weight taken out through the activations' group sums,
// VPMADDWD; then VPMADDUBSW and VPDPWSSD with the scales), and per block
// every kernel does, in float32,
//
//	acc[j] = fma(float32(I_j) * d, d_x, acc[j])
//
// The sum is reduceLanes of the 16 accumulators.

// q6KBlockBytes is the bytes of one block_q6_K of 256 weights.
const q6KBlockBytes = 210

// q6KWeight returns u of weight 64c+k of block_q6_K blk (see above).
func q6KWeight(blk []byte, c, k int) int32 {
	n, p := c/2, c%2
	lo := blk[64*n+k] >> (4 * p) & 15
	hi := blk[128+32*n+k%32] >> (4*p + 2*(k/32)) & 3
	return int32(lo | hi<<4)
}

// q6_KLanes adds to acc the accumulators of Q6_K row w times the Q8_K
// input a over nsb blocks of 256: the portable kernel.
func q6_KLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) {
	t := f16Table()
	for S := range nsb {
		blk := w[S*q6KBlockBytes : (S+1)*q6KBlockBytes : (S+1)*q6KBlockBytes]
		q, bsums, dx := q8KBlock(a[S*q8KBlockBytes : (S+1)*q8KBlockBytes])
		d := t[binary.LittleEndian.Uint16(blk[208:])]
		sc := func(g int) int32 { return int32(int8(blk[192+g])) }
		var isum [q8Lanes]int32
		for j := range 8 {
			isum[j] = -32 * (sc(2*j)*bsums[2*j] + sc(2*j+1)*bsums[2*j+1])
		}
		for c := range 4 {
			for j := range q8Lanes {
				var l int32
				for k := range 4 {
					l += q6KWeight(blk, c, 4*j+k) * int32(int8(q[64*c+4*j+k]))
				}
				isum[j] += sc(4*c+j/4) * l
			}
		}
		for j := range q8Lanes {
			acc[j] = fma32(float32(isum[j])*d, dx, acc[j])
		}
	}
}

// dotQ6_KQ8K is the dot product of Q6_K row w with the Q8_K input a (nsb
// blocks of 256): the result every path gives for this row and input.
func dotQ6_KQ8K(w, a []byte, nsb int) float32 {
	var out [1]float32
	q6_KRows(w, 0, a, nsb, out[:])
	return out[0]
}

// q6_KDotGo is the portable dotQ6_KQ8K.
func q6_KDotGo(w, a []byte, nsb int) float32 { return kDotGo(q6_KLanes, w, a, nsb) }

// q6_KTileGo is the portable q6_KTile: q6_KLanes per output.
func q6_KTileGo(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q6_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}
