package blocks

import (
	"encoding/binary"
	"sync"

	"github.com/swarmllm/swarm/swarm"
)

// Dequantization of GGML's block-quantized weight types. The layouts are
// llama.cpp's block structs (ggml/src/ggml-common.h: block_q4_0 ...
// block_iq4_xs) and the value formulas those of its dequantize_row_*
// functions (ggml/src/ggml-quants.c); the code is our own. Every f16 field
// is little-endian. Each function expands one block into dst[:blockSize],
// in element order.
//
// Dot products dequantize on the fly: a row is expanded a chunk of at most
// quantChunk elements at a time into a buffer on the stack and dotted with
// the activations by dotF32 (dotQuant), the portable path and the one of
// the types without AVX2 kernels (quant_amd64.go). Activations stay float32 (llama.cpp
// rounds them to 8 bits, Q8_0 or Q8_K, inside its dot products; see the
// llama.cpp oracle test for what that difference amounts to).

// dotQ4_0, dotIQ4_NL, dotIQ4_XS, dotQ4_K, dotQ5_K and dotQ6_K are the dot
// products of a row of their type with x: dotQuant, or AVX2 kernels on
// amd64 (quant_amd64.go). They are set once at package init.
var (
	dotQ4_0   = func(w []byte, x []float32) float32 { return dotQuant(deqQ4_0, 32, 18, w, x) }
	dotIQ4_NL = func(w []byte, x []float32) float32 { return dotQuant(deqIQ4_NL, 32, 18, w, x) }
	dotIQ4_XS = func(w []byte, x []float32) float32 { return dotQuant(deqIQ4_XS, 256, 136, w, x) }
	dotQ4_K   = func(w []byte, x []float32) float32 { return dotQuant(deqQ4_K, 256, 144, w, x) }
	dotQ5_K   = func(w []byte, x []float32) float32 { return dotQuant(deqQ5_K, 256, 176, w, x) }
	dotQ6_K   = func(w []byte, x []float32) float32 { return dotQuant(deqQ6_K, 256, 210, w, x) }
)

// quantChunk is the number of elements dotQuant expands at once: one K-quant
// super-block, or 8 blocks of 32.
const quantChunk = 256

// dequantizer expands one block of its dtype into dst[:blockSize].
type dequantizer func(blk []byte, dst []float32)

// dequantizers are the block-quantized dtypes computed by dequantizing on
// the fly (Q8_0 has its own kernels, dotQ8_0).
var dequantizers = map[swarm.DType]dequantizer{
	swarm.DTypeQ8_0:   deqQ8_0,
	swarm.DTypeQ4_0:   deqQ4_0,
	swarm.DTypeQ4_1:   deqQ4_1,
	swarm.DTypeQ5_0:   deqQ5_0,
	swarm.DTypeQ5_1:   deqQ5_1,
	swarm.DTypeQ2_K:   deqQ2_K,
	swarm.DTypeQ3_K:   deqQ3_K,
	swarm.DTypeQ4_K:   deqQ4_K,
	swarm.DTypeQ5_K:   deqQ5_K,
	swarm.DTypeQ6_K:   deqQ6_K,
	swarm.DTypeIQ4_NL: deqIQ4_NL,
	swarm.DTypeIQ4_XS: deqIQ4_XS,
}

// halfAt reads the little-endian binary16 value at b[i:i+2] as float32.
func halfAt(b []byte, i int) float32 { return f16Table()[binary.LittleEndian.Uint16(b[i:])] }

// dotQuant is the dot product of one quantized row w (whole blocks of bs
// elements in bb bytes each) with x: each chunk of up to quantChunk
// elements is dequantized and dotted by dotF32, the chunk sums added in
// order.
func dotQuant(deq dequantizer, bs, bb int, w []byte, x []float32) float32 {
	// A pooled buffer: one on the stack would move to the heap on every
	// call (deq is a function value).
	bp := quantBufs.Get().(*[quantChunk]float32)
	defer quantBufs.Put(bp)
	buf := bp[:]
	per := quantChunk / bs // blocks per chunk
	nb := len(w) / bb
	var sum float32
	for b := 0; b < nb; b += per {
		n := min(per, nb-b)
		for i := range n {
			deq(w[(b+i)*bb:(b+i+1)*bb], buf[i*bs:(i+1)*bs])
		}
		sum += dotF32(buf[:n*bs], x[b*bs:(b+n)*bs])
	}
	return sum
}

// quantBufs recycles dotQuant's dequantized chunks.
var quantBufs = sync.Pool{New: func() any { return new([quantChunk]float32) }}

// dequantRow expands the whole blocks of w into dst.
func dequantRow(deq dequantizer, bs, bb int, w []byte, dst []float32) {
	for b := range len(w) / bb {
		deq(w[b*bb:(b+1)*bb], dst[b*bs:(b+1)*bs])
	}
}

// deqQ8_0: block_q8_0 {d f16; qs [32]int8}: x = d*q.
func deqQ8_0(blk []byte, dst []float32) {
	d := halfAt(blk, 0)
	for j, q := range blk[2:34] {
		dst[j] = float32(int8(q)) * d
	}
}

// deqQ4_0: block_q4_0 {d f16; qs [16]byte}: element j < 16 is the low
// nibble of qs[j], element j+16 its high nibble; x = d*(q-8).
func deqQ4_0(blk []byte, dst []float32) {
	d := halfAt(blk, 0)
	dst = dst[:32]
	for j, q := range blk[2:18] {
		dst[j] = float32(int(q&15)-8) * d
		dst[j+16] = float32(int(q>>4)-8) * d
	}
}

// deqQ4_1: block_q4_1 {d, m f16; qs [16]byte}: x = d*q + m.
func deqQ4_1(blk []byte, dst []float32) {
	d, m := halfAt(blk, 0), halfAt(blk, 2)
	dst = dst[:32]
	for j, q := range blk[4:20] {
		dst[j] = float32(q&15)*d + m
		dst[j+16] = float32(q>>4)*d + m
	}
}

// deqQ5_0: block_q5_0 {d f16; qh uint32; qs [16]byte}: the low nibbles as
// Q4_0, bit j of qh the fifth bit of element j; x = d*(q-16).
func deqQ5_0(blk []byte, dst []float32) {
	d := halfAt(blk, 0)
	qh := binary.LittleEndian.Uint32(blk[2:])
	dst = dst[:32]
	for j, q := range blk[6:22] {
		h0 := byte(qh>>j&1) << 4
		h1 := byte(qh>>(j+16)&1) << 4
		dst[j] = float32(int(q&15|h0)-16) * d
		dst[j+16] = float32(int(q>>4|h1)-16) * d
	}
}

// deqQ5_1: block_q5_1 {d, m f16; qh uint32; qs [16]byte}: x = d*q + m.
func deqQ5_1(blk []byte, dst []float32) {
	d, m := halfAt(blk, 0), halfAt(blk, 2)
	qh := binary.LittleEndian.Uint32(blk[4:])
	dst = dst[:32]
	for j, q := range blk[8:24] {
		h0 := byte(qh>>j&1) << 4
		h1 := byte(qh>>(j+16)&1) << 4
		dst[j] = float32(q&15|h0)*d + m
		dst[j+16] = float32(q>>4|h1)*d + m
	}
}

// deqQ2_K: block_q2_K {scales [16]byte; qs [64]byte; d, dmin f16}. Each
// half h of 128 elements reads qs[32h:32h+32] four times (2 bits at shift
// 2j); group g = 8h+2j (elements 32j..32j+15 of the half, from qs bytes
// 0..15) and g+1 (the next 16, from bytes 16..31) have scale d*(sc&15) and
// min dmin*(sc>>4) from scales[g]: x = scale*q - min.
func deqQ2_K(blk []byte, dst []float32) {
	sc, qs := blk[0:16], blk[16:80]
	d, dmin := halfAt(blk, 80), halfAt(blk, 82)
	dst = dst[:256]
	for h := range 2 {
		q := qs[32*h : 32*h+32]
		for j := range 4 {
			shift := 2 * j
			out := dst[128*h+32*j:]
			for k := range 2 {
				s := sc[8*h+2*j+k]
				dl, ml := d*float32(s&15), dmin*float32(s>>4)
				for l := range 16 {
					out[16*k+l] = dl*float32(q[16*k+l]>>shift&3) - ml
				}
			}
		}
	}
}

// q3KScales unpacks block_q3_K's 16 6-bit signed scales (12 bytes: the low
// 4 bits of scale j < 8 in byte j, of j >= 8 in the high nibble of byte
// j-8; the top 2 bits of scale j in byte 8 + j%4 at bit 2*(j/4)), minus 32.
func q3KScales(s []byte) (out [16]int) {
	for j := range 16 {
		lo := s[j%8] >> (4 * (j / 8)) & 15
		hi := s[8+j%4] >> (2 * (j / 4)) & 3
		out[j] = int(lo|hi<<4) - 32
	}
	return out
}

// deqQ3_K: block_q3_K {hmask [32]byte; qs [64]byte; scales [12]byte; d
// f16}. The low 2 bits as in Q2_K; bit i of hmask[l] (i counting the eight
// (half, shift) passes) is set when the value is not offset by -4; x =
// d*scale*q with q in -4..3.
func deqQ3_K(blk []byte, dst []float32) {
	hm, qs := blk[0:32], blk[32:96]
	scales := q3KScales(blk[96:108])
	d := halfAt(blk, 108)
	dst = dst[:256]
	bit := byte(1)
	for h := range 2 {
		q := qs[32*h : 32*h+32]
		for j := range 4 {
			shift := 2 * j
			out := dst[128*h+32*j:]
			for k := range 2 {
				dl := d * float32(scales[8*h+2*j+k])
				for l := range 16 {
					v := int(q[16*k+l] >> shift & 3)
					if hm[16*k+l]&bit == 0 {
						v -= 4
					}
					out[16*k+l] = dl * float32(v)
				}
			}
			bit <<= 1
		}
	}
}

// kScaleMin unpacks the 6-bit scale and min of group j (0..7) from the 12
// scale bytes of block_q4_K and block_q5_K (llama.cpp's get_scale_min_k4):
// groups 0..3 in the low 6 bits of bytes j and j+4, groups 4..7 as a
// nibble of byte j+4 plus the top 2 bits of bytes j-4 and j.
func kScaleMin(s []byte, j int) (sc, m float32) {
	if j < 4 {
		return float32(s[j] & 63), float32(s[j+4] & 63)
	}
	return float32(s[j+4]&15 | s[j-4]>>6<<4), float32(s[j+4]>>4 | s[j]>>6<<4)
}

// deqQ4_K: block_q4_K {d, dmin f16; scales [12]byte; qs [128]byte}. Chunk
// c of 64 elements reads qs[32c:32c+32]: low nibbles are group 2c, high
// nibbles group 2c+1; x = d*sc*q - dmin*m.
func deqQ4_K(blk []byte, dst []float32) {
	d, dmin := halfAt(blk, 0), halfAt(blk, 2)
	s, qs := blk[4:16], blk[16:144]
	dst = dst[:256]
	for c := range 4 {
		sc1, m1 := kScaleMin(s, 2*c)
		sc2, m2 := kScaleMin(s, 2*c+1)
		d1, min1, d2, min2 := d*sc1, dmin*m1, d*sc2, dmin*m2
		q := qs[32*c : 32*c+32]
		out := dst[64*c : 64*c+64]
		for l := range 32 {
			out[l] = d1*float32(q[l]&15) - min1
			out[32+l] = d2*float32(q[l]>>4) - min2
		}
	}
}

// deqQ5_K: block_q5_K {d, dmin f16; scales [12]byte; qh [32]byte; qs
// [128]byte}: Q4_K plus a fifth bit, bit 2c of qh[l] for the low nibble of
// chunk c and bit 2c+1 for the high one.
func deqQ5_K(blk []byte, dst []float32) {
	d, dmin := halfAt(blk, 0), halfAt(blk, 2)
	s, qh, qs := blk[4:16], blk[16:48], blk[48:176]
	dst = dst[:256]
	for c := range 4 {
		sc1, m1 := kScaleMin(s, 2*c)
		sc2, m2 := kScaleMin(s, 2*c+1)
		d1, min1, d2, min2 := d*sc1, dmin*m1, d*sc2, dmin*m2
		q := qs[32*c : 32*c+32]
		out := dst[64*c : 64*c+64]
		for l := range 32 {
			h := qh[l] >> (2 * c)
			out[l] = d1*float32(q[l]&15|(h&1)<<4) - min1
			out[32+l] = d2*float32(q[l]>>4|(h>>1&1)<<4) - min2
		}
	}
}

// deqQ6_K: block_q6_K {ql [128]byte; qh [64]byte; scales [16]int8; d
// f16}. Half h (128 elements) reads ql[64h:64h+64], qh[32h:32h+32] and
// scales[8h:8h+8]: element 32i+l (i = 0..3, l < 32) takes a nibble of
// ql[l + 32*(i%2)] (low for i < 2) and bits 2i..2i+1 of qh[l], minus 32,
// times d*scales[8h + 2i + l/16].
func deqQ6_K(blk []byte, dst []float32) {
	d := halfAt(blk, 208)
	dst = dst[:256]
	for h := range 2 {
		ql, qh, sc := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32], blk[192+8*h:192+8*h+8]
		out := dst[128*h : 128*h+128]
		for l := range 32 {
			is := l / 16
			q1 := int(ql[l]&15|(qh[l]&3)<<4) - 32
			q2 := int(ql[l+32]&15|(qh[l]>>2&3)<<4) - 32
			q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			out[l] = d * float32(int8(sc[is])) * float32(q1)
			out[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			out[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
	}
}

// iq4Levels are the 16 non-linear levels of IQ4_NL and IQ4_XS
// (kvalues_iq4nl in ggml-common.h).
var iq4Levels = [16]float32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// deqIQ4_NL: block_iq4_nl {d f16; qs [16]byte}: nibbles as in Q4_0,
// x = d*iq4Levels[q].
func deqIQ4_NL(blk []byte, dst []float32) {
	d := halfAt(blk, 0)
	dst = dst[:32]
	for j, q := range blk[2:18] {
		dst[j] = d * iq4Levels[q&15]
		dst[j+16] = d * iq4Levels[q>>4]
	}
}

// deqIQ4_XS: block_iq4_xs {d f16; scales_h uint16; scales_l [4]byte; qs
// [128]byte}: group g of 32 has the 6-bit scale ls (low nibble g%2 of
// scales_l[g/2], top bits 2g..2g+1 of scales_h) and IQ4_NL nibbles in
// qs[16g:16g+16]; x = d*(ls-32)*iq4Levels[q].
func deqIQ4_XS(blk []byte, dst []float32) {
	d := halfAt(blk, 0)
	sh := binary.LittleEndian.Uint16(blk[2:])
	sl, qs := blk[4:8], blk[8:136]
	dst = dst[:256]
	for g := range 8 {
		ls := int(sl[g/2]>>(4*(g%2))&15) | int(sh>>(2*g)&3)<<4
		dl := d * float32(ls-32)
		out := dst[32*g : 32*g+32]
		for j, q := range qs[16*g : 16*g+16] {
			out[j] = dl * iq4Levels[q&15]
			out[j+16] = dl * iq4Levels[q>>4]
		}
	}
}
