package blocks

import (
	"encoding/binary"
	"math"
)

// Q4_K weights times 8-bit activations (q8act.go). A block_q4_K of 256
// weights (144 bytes: d, dmin f16; 12 bytes of 6-bit scales sc_s and
// minimums m_s for its 8 groups of 32; 128 bytes of 4-bit q) holds
// w = d*sc_s*q - dmin*m_s for group s (ggml-common.h block_q4_K,
// ggml-quants.c dequantize_row_q4_K). Group s is activation block b of
// the row, so with the activations' q_i and d_b
//
//	sum_i w_i x_i ~ d_b * (d*sc_s * sum_i q4_i q_i - dmin*m_s * sum_i q_i).
//
// Group pairs (2c, 2c+1) are chunk c of the block's q (low and high
// nibbles of the same 32 bytes) and block pair 4S+c of the activations.
// Per pair, with lanes as in q8Lanes (lane j of a group sums 4 products
// of unsigned nibbles and signed q, exact in int32), every kernel does
//
//	p         = float32(L_hj) * ((d*sc_h) * d_b)
//	acc[8h+j] = acc[8h+j] + fma(Qdx_hj, -(dmin*m_h), p)
//
// where h is the group within the pair, Qdx the activations' lane sums
// times d_b (bytes 192..255 of a pair) and the products d*sc, dmin*m are
// float32 (one add per pair on each accumulator's dependency chain, which
// is what bounds a single row's kernel). The sum is reduceLanes of the 16
// accumulators.

// q4KBlockBytes is the bytes of one block_q4_K of 256 weights.
const q4KBlockBytes = 144

// q4KScales returns d*sc_s and -(dmin*m_s) for the 8 groups of block_q4_K
// blk, as float32 (kScaleMin's unpacking).
func q4KScales(blk []byte) (dsc, negm [8]float32) {
	t := f16Table()
	d, dmin := t[binary.LittleEndian.Uint16(blk)], t[binary.LittleEndian.Uint16(blk[2:])]
	for s := range 8 {
		sc, m := kScaleMin(blk[4:16], s)
		dsc[s], negm[s] = d*sc, -(dmin * m)
	}
	return dsc, negm
}

// q4_KLanes adds to acc the accumulators of Q4_K row w times the quantized
// input a over nsb blocks of 256: the portable kernel.
func q4_KLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) {
	for S := range nsb {
		blk := w[S*q4KBlockBytes : (S+1)*q4KBlockBytes : (S+1)*q4KBlockBytes]
		dsc, negm := q4KScales(blk)
		for c := range 4 {
			qs := blk[16+32*c : 16+32*c+32 : 16+32*c+32]
			pair := a[(4*S+c)*q8ActPairBytes : (4*S+c+1)*q8ActPairBytes : (4*S+c+1)*q8ActPairBytes]
			for h := range 2 {
				db := math.Float32frombits(binary.LittleEndian.Uint32(pair[128+32*h:]))
				s1, s2 := dsc[2*c+h]*db, negm[2*c+h]
				for j := range 8 {
					var l int32
					for k := range 4 {
						nib := int32(qs[4*j+k]>>(4*h)) & 15
						l += nib * int32(int8(pair[32*h+4*j+k]))
					}
					qdx := math.Float32frombits(binary.LittleEndian.Uint32(pair[192+32*h+4*j:]))
					p := float32(float32(l) * s1)
					acc[8*h+j] += fma32(qdx, s2, p)
				}
			}
		}
	}
}

// dotQ4_KQ8 is the dot product of Q4_K row w with the quantized input a
// (nsb blocks of 256): the result every path gives for this row and input.
func dotQ4_KQ8(w, a []byte, nsb int) float32 {
	var acc [q8Lanes]float32
	q4_KRow(w, a, nsb, &acc)
	return reduceLanes(&acc)
}

// q4_KTile3x4Go is the portable q4_KTile3x4: q4_KLanes per output.
func q4_KTile3x4Go(w []byte, ldw int, a []byte, lda, nsb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	if zero {
		clear(acc[:])
	}
	for i := range 12 {
		r, t := i/4, i%4
		q4_KLanes(w[r*ldw:], a[t*lda:], nsb, (*[q8Lanes]float32)(acc[i*q8Lanes:]))
	}
}
