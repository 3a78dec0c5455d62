package blocks

import "encoding/binary"

// iq4XSBlockBytes is the bytes of one block_iq4_xs of 256 weights
// (ggml-common.h: d f16, scales_h uint16, scales_l [4]byte, qs [128]byte).
const iq4XSBlockBytes = 136

// iq4XSScales returns the eight group scales ls - 32 of IQ4_XS block blk:
// group g's low four bits are nibble g%2 of scales_l[g/2], its top two
// bits 2g..2g+1 of scales_h (dequantize_row_iq4_xs).
func iq4XSScales(blk []byte) (s [8]int32) {
	sh := int32(binary.LittleEndian.Uint16(blk[2:]))
	for g := range s {
		s[g] = (int32(blk[4+g/2]>>(4*(g%2))&15) | (sh>>(2*g)&3)<<4) - 32
	}
	return s
}

// iq4_XSLanes adds to acc the accumulators of IQ4_XS row w times the Q8_K
// input a over nsb blocks of 256: the portable kernel, and the integers
// the VNNI kernels compute (kquant_amd64.s). Element e of a block is the
// level (iq4Levels) of nibble e%32 of group e/32's 16 bytes qs[16g:]. Per
// block, chunk c (elements 64c..64c+63) adds to lane j s_{2c+j/8} * sum_{k<4}
// level * q over elements 64c+4j+k (the kernels multiply |level| by q
// with the level's sign, in 16-bit pairs that cannot overflow); the lane
// ends as float32(I) * d fused-multiply-added with dx, as for Q6_K.
func iq4_XSLanes(w, a []byte, nsb int, acc *[q8Lanes]float32) {
	t := f16Table()
	for S := range nsb {
		blk := w[S*iq4XSBlockBytes : (S+1)*iq4XSBlockBytes : (S+1)*iq4XSBlockBytes]
		q, _, dx := q8KBlock(a[S*q8KBlockBytes : (S+1)*q8KBlockBytes])
		d := t[binary.LittleEndian.Uint16(blk)]
		s := iq4XSScales(blk)
		var isum [q8Lanes]int32
		for c := range 4 {
			for j := range q8Lanes {
				var l int32
				for k := range 4 {
					e := 64*c + 4*j + k
					l += int32(iq4Levels[nibble(blk[8+16*(e/32):], e%32)]) * int32(int8(q[e]))
				}
				isum[j] += s[2*c+j/8] * l
			}
		}
		for j := range q8Lanes {
			acc[j] = fma32(float32(isum[j])*d, dx, acc[j])
		}
	}
}

// dotIQ4_XSQ8K is the product of IQ4_XS row w with the Q8_K input a: the
// result every path gives for this row and input.
func dotIQ4_XSQ8K(w, a []byte, nsb int) float32 {
	var out [1]float32
	iq4_XSRows(w, 0, a, nsb, out[:])
	return out[0]
}

// iq4_XSDotGo is the portable dotIQ4_XSQ8K.
func iq4_XSDotGo(w, a []byte, nsb int) float32 { return kDotGo(iq4_XSLanes, w, a, nsb) }
