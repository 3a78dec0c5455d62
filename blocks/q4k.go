package blocks

import (
	"encoding/binary"
)

// Q4_K weights times Q8_K activations (q8k.go), as llama.cpp's
// ggml_vec_dot_q4_K_q8_K computes them. A block_q4_K of 256 weights (144
// bytes: d, dmin f16; 12 bytes of 6-bit scales sc_s and minimums m_s for
// its 8 groups of 32; 128 bytes of 4-bit q) holds w = d*sc_s*q - dmin*m_s
// for group s (ggml-common.h block_q4_K, ggml-quants.c
// dequantize_row_q4_K). With the activations' q_i, group sums B_s and d_x
//
//	sum_i w_i x_i ~ d_x * (d * sum_s sc_s sum_{i in s} q4_i q_i - dmin * sum_s m_s B_s).
//
// Chunk c of the block (64 weights) is the low nibbles of qs[32c:32c+32]
// (group 2c) then their high nibbles (group 2c+1), against activations
// q[64c:64c+64]. Lane j < 16 (bytes 4j..4j+3 of a chunk; lanes 0-7 group
// 2c, 8-15 group 2c+1) sums, exact in int32,
//
//	I_j = sum_c sc_{2c+j/8} * sum_{k<4} q4_{64c+4j+k} q_{64c+4j+k}
//	M_j = m_j * (bsums_2j + bsums_2j+1)   (j < 8; 0 for j >= 8)
//
// (VPMADDUBSW, then VPDPWSSD with the scales, and VPMADDWD for M), and
// per block every kernel does, in float32,
//
//	f      = float32(I_j) * d
//	f      = fma(float32(M_j), -dmin, f)
//	acc[j] = fma(f, d_x, acc[j])
//
// The sum is reduceLanes of the 16 accumulators.

// q4KBlockBytes is the bytes of one block_q4_K of 256 weights.
const q4KBlockBytes = 144

// q4_KLanes adds to acc the accumulators of Q4_K row w times the Q8_K
// input a over nsb blocks of 256: the portable kernel.
func q4_KLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) { kLanes45(w, a, nsb, acc, false) }

// q5KBlockBytes is the bytes of one block_q5_K of 256 weights: a Q4_K
// block with qh [32]byte between its scales and its nibbles.
const q5KBlockBytes = 176

// q5_KLanes is q4_KLanes for Q5_K row w: the weights' unsigned values
// gain their fifth bit, bit 2c (low nibbles) or 2c+1 (high) of qh[l]
// (deqQ5_K), and are at most 31; everything else is Q4_K's.
func q5_KLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) { kLanes45(w, a, nsb, acc, true) }

// q5_KTileGo is the portable q5_KTile: q5_KLanes per output.
func q5_KTileGo(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q5_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q5_KDotGo is the portable dotQ5_KQ8K.
func q5_KDotGo(w, a []byte, nsb int) float32 { return kDotGo(q5_KLanes, w, a, nsb) }

// dotQ5_KQ8K is the product of Q5_K row w with the Q8_K input a: the
// result every path gives for this row and input.
func dotQ5_KQ8K(w, a []byte, nsb int) float32 {
	var out [1]float32
	q5_KRows(w, 0, a, nsb, out[:])
	return out[0]
}

// kLanes45 is q4_KLanes, or q5_KLanes when five is set.
func kLanes45(w, a []byte, nsb int, acc *[q8Lanes]float32, five bool) {
	t := f16Table()
	bb, qsOff := q4KBlockBytes, 16
	if five {
		bb, qsOff = q5KBlockBytes, 48
	}
	for S := range nsb {
		blk := w[S*bb : (S+1)*bb : (S+1)*bb]
		q, bsums, dx := q8KBlock(a[S*q8KBlockBytes : (S+1)*q8KBlockBytes])
		d, dmin := t[binary.LittleEndian.Uint16(blk)], t[binary.LittleEndian.Uint16(blk[2:])]
		var sc, m [8]int32
		for s := range 8 {
			fs, fm := kScaleMin(blk[4:16], s)
			sc[s], m[s] = int32(fs), int32(fm)
		}
		var isum, imin [q8Lanes]int32
		for c := range 4 {
			qs := blk[qsOff+32*c : qsOff+32*c+32 : qsOff+32*c+32]
			for j := range q8Lanes {
				h := j / 8
				var l int32
				for k := range 4 {
					b := 4*(j%8) + k
					v := qs[b] >> (4 * h) & 15
					if five {
						v |= (blk[16+b] >> (2*c + h) & 1) << 4
					}
					l += int32(v) * int32(int8(q[64*c+4*j+k]))
				}
				isum[j] += sc[2*c+h] * l
			}
		}
		for j := range 8 {
			imin[j] = m[j] * (bsums[2*j] + bsums[2*j+1])
		}
		for j := range q8Lanes {
			f := float32(isum[j]) * d
			f = fma32(float32(imin[j]), -dmin, f)
			acc[j] = fma32(f, dx, acc[j])
		}
	}
}

// dotQ4_KQ8K is the dot product of Q4_K row w with the Q8_K input a (nsb
// blocks of 256): the result every path gives for this row and input.
func dotQ4_KQ8K(w, a []byte, nsb int) float32 {
	var out [1]float32
	q4_KRows(w, 0, a, nsb, out[:])
	return out[0]
}

// q4_KDotGo is the portable dotQ4_KQ8K.
func q4_KDotGo(w, a []byte, nsb int) float32 { return kDotGo(q4_KLanes, w, a, nsb) }

// q4_KTileGo is the portable q4_KTile: q4_KLanes per output.
func q4_KTileGo(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q4_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}
