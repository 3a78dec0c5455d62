package blocks

import (
	"encoding/binary"
	"math"
)

// Q6_K weights times 8-bit activations (q8act.go). A block_q6_K of 256
// weights (210 bytes: ql [128] low 4 bits, qh [64] high 2 bits, 16 int8
// scales, d f16) holds w = d*sc*(u - 32) with u the 6-bit value and sc the
// scale of each 16 weights (ggml-common.h block_q6_K, ggml-quants.c
// dequantize_row_q6_K). Half n (128 weights) has groups of 32: group 0 the
// low nibbles of ql[64n:64n+32] with bits 0-1 of qh[32n:32n+32], group 1
// the low nibbles of ql[64n+32:64n+64] with bits 2-3, groups 2 and 3 the
// high nibbles with bits 4-5 and 6-7. Group 4n+g is activation block
// 8S+4n+g, so activation pair 4S+p holds groups (2p, 2p+1) of the block,
// whose 16 lanes take scales sc[4p .. 4p+3], four lanes each.
//
// Per pair, with lanes as in q8Lanes, every kernel does
//
//	L_j       = sum_{k<4} (u_{4j+k} - 32) * q_{4j+k}      (exact, int32)
//	acc[j]    = fma(float32(L_j), (d*sc_j) * d_b, acc[j])
//
// (u - 32 is computed as u times q, VPDPBUSD, from lane j starting at the
// activations' c_j / 4 = -32 * sum q). The sum is reduceLanes.

// q6KBlockBytes is the bytes of one block_q6_K of 256 weights.
const q6KBlockBytes = 210

// q6_KLanes adds to acc the accumulators of Q6_K row w times the quantized
// input a over nsb blocks of 256: the portable kernel.
func q6_KLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) {
	t := f16Table()
	for S := range nsb {
		blk := w[S*q6KBlockBytes : (S+1)*q6KBlockBytes : (S+1)*q6KBlockBytes]
		d := t[binary.LittleEndian.Uint16(blk[208:])]
		for p := range 4 {
			n, hb := p/2, p%2 // half, and which pair of its groups
			ql, qh := blk[64*n:64*n+64], blk[128+32*n:128+32*n+32]
			pair := a[(4*S+p)*q8ActPairBytes : (4*S+p+1)*q8ActPairBytes : (4*S+p+1)*q8ActPairBytes]
			for lane := range q8Lanes {
				g := lane / 8 // group within the pair: 2*hb + g of the half
				dsc := d * float32(int8(blk[192+4*p+lane/4]))
				db := math.Float32frombits(binary.LittleEndian.Uint32(pair[128+4*lane:]))
				var l int32
				for k := range 4 {
					e := 4*(lane%8) + k // element of the group, 0..31
					var u byte
					switch 2*hb + g {
					case 0:
						u = ql[e]&15 | (qh[e]&3)<<4
					case 1:
						u = ql[32+e]&15 | (qh[e]>>2&3)<<4
					case 2:
						u = ql[e]>>4 | (qh[e]>>4&3)<<4
					default:
						u = ql[32+e]>>4 | (qh[e]>>6&3)<<4
					}
					l += (int32(u) - 32) * int32(int8(pair[32*g+4*(lane%8)+k]))
				}
				acc[lane] = fma32(float32(l), dsc*db, acc[lane])
			}
		}
	}
}

// dotQ6_KQ8 is the dot product of Q6_K row w with the quantized input a
// (nsb blocks of 256): the result every path gives for this row and input.
func dotQ6_KQ8(w, a []byte, nsb int) float32 {
	var acc [q8Lanes]float32
	q6_KRow(w, a, nsb, &acc)
	return reduceLanes(&acc)
}

// q6_KTile3x4Go is the portable q6_KTile3x4: q6_KLanes per output.
func q6_KTile3x4Go(w []byte, ldw int, a []byte, lda, nsb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	if zero {
		clear(acc[:])
	}
	for i := range 12 {
		r, t := i/4, i%4
		q6_KLanes(w[r*ldw:], a[t*lda:], nsb, (*[q8Lanes]float32)(acc[i*q8Lanes:]))
	}
}
