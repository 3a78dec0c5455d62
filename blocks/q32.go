package blocks

import (
	"encoding/binary"
	"math"
)

// q32 is a weight format of blocks of 32 values whose products take the
// 8-bit activations in pairs of blocks (quantizeActs): Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1 and IQ4_NL, with the block structs of llama.cpp's ggml-common.h
// (block_q8_0 ... block_q5_1, block_iq4_nl). Q5_0, Q5_1, IQ4_NL and
// Q8_0 are what llama.cpp's quantizer (llama_tensor_get_type) falls back
// to for Q4_K, Q5_K, Q2_K/Q3_K/IQ4_XS and Q6_K matrices whose rows are not
// a multiple of 256 wide (Qwen2.5-0.5B's 896, for one: every matrix of it
// but the FFN down projections).
//
// Every kernel of a format (the portable lanes, the 3x4 tile, the one-row
// and the rows kernels in q8gemm_amd64.s and q8avx2_amd64.s) computes a
// lane with the same integer sum and the same float32 steps, so a row's
// result depends neither on the kernel nor on the batch.
type q32 uint8

const (
	q32Q8_0 q32 = iota
	q32Q4_0
	q32Q4_1
	q32Q5_0
	q32Q5_1
	q32IQ4_NL
)

// blockBytes is the bytes of one block of 32 weights: block_q8_0 {d f16;
// qs [32]int8}, block_q4_0 {d; qs [16]byte}, block_q4_1 {d, m; qs},
// block_q5_0 {d; qh uint32; qs}, block_q5_1 {d, m; qh; qs}, block_iq4_nl
// {d; qs}.
func (f q32) blockBytes() int { return [...]int{q8BlockBytes, 18, 20, 22, 24, 18}[f] }

// products is f's entry in q8Dtypes.
func (f q32) products() *q8Products {
	return &q8Products{acts: acts32, unitBlocks: 1, unitBytes: f.blockBytes(), actUnitBytes: q8ActPairBytes / 2,
		tile: f.tile, dot: f.dot, rows: f.rows}
}

// lanes adds to acc the lanes of row w of format f times the quantized
// input a over nb blocks: the portable kernel of every f x Q8 product
// (the one in use without the assembly).
func (f q32) lanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	switch f {
	case q32Q8_0:
		q8_0Lanes(w, a, nb, acc)
	case q32Q4_0:
		q4_0Lanes(w, a, nb, acc)
	case q32Q4_1:
		q4_1Lanes(w, a, nb, acc)
	case q32Q5_0:
		q5_0Lanes(w, a, nb, acc)
	case q32Q5_1:
		q5_1Lanes(w, a, nb, acc)
	case q32IQ4_NL:
		iq4_nlLanes(w, a, nb, acc)
	}
}

// tileGo is the portable f.tile: f.lanes per output.
func (f q32) tileGo(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	if zero {
		clear(acc[:])
	}
	for i := range 12 {
		r, t := i/4, i%4
		f.lanes(w[r*ldw:], a[t*lda:], nb, (*[q8Lanes]float32)(acc[i*q8Lanes:]))
	}
}

// dot is the product of row w of format f with the quantized input a
// (both nb blocks): the result every path gives for this row and input.
func (f q32) dot(w, a []byte, nb int) float32 {
	var acc [q8Lanes]float32
	f.row(w, a, nb, &acc)
	return reduceLanes(&acc)
}

// q8_0Lanes is lanes32 of Q8_0 rows: element e is int8 byte 2+e.
func q8_0Lanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	lanes32(w, a, nb, acc, q8BlockBytes, false, func(wb []byte, e int) int32 { return int32(int8(wb[2+e])) })
}

// nibble is element e (< 32) of a block's 16 bytes of nibbles qs: the low
// nibble of qs[e] for e < 16, the high nibble of qs[e-16] after (llama.cpp's
// dequantize_row_q4_0 order).
func nibble(qs []byte, e int) int32 { return int32(qs[e%16] >> (4 * (e / 16)) & 15) }

// fifthBit is bit 4 of element e of a Q5 block: bit e of its qh.
func fifthBit(qh []byte, e int) int32 { return int32(binary.LittleEndian.Uint32(qh)>>e&1) << 4 }

// q4_0Lanes is q8_0Lanes for Q4_0 rows: element e is nibble e minus 8, so
// lane j's integer sum is sum_k (nib - 8) q, exact in int32 whichever way
// a kernel computes it (the assembly multiplies the unsigned nibbles and
// starts the lane at c_j / 16 = -8 * sum_k q_{4j+k}).
func q4_0Lanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	lanes32(w, a, nb, acc, q32Q4_0.blockBytes(), false, func(wb []byte, e int) int32 { return nibble(wb[2:], e) - 8 })
}

// q5_0Lanes is q4_0Lanes for Q5_0 rows: element e is nibble e plus its
// fifth bit, minus 16 (the assembly starts the lane at c_j / 8).
func q5_0Lanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	lanes32(w, a, nb, acc, q32Q5_0.blockBytes(), false, func(wb []byte, e int) int32 {
		return (nibble(wb[6:], e) | fifthBit(wb[2:], e)) - 16
	})
}

// q4_1Lanes is the lanes of Q4_1 rows, x = d*q + m with q the unsigned
// nibble (lanes32 withMin).
func q4_1Lanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	lanes32(w, a, nb, acc, q32Q4_1.blockBytes(), true, func(wb []byte, e int) int32 { return nibble(wb[4:], e) })
}

// q5_1Lanes is q4_1Lanes for Q5_1 rows: q is the nibble plus its fifth
// bit, 0..31.
func q5_1Lanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	lanes32(w, a, nb, acc, q32Q5_1.blockBytes(), true, func(wb []byte, e int) int32 {
		return nibble(wb[8:], e) | fifthBit(wb[4:], e)
	})
}

// lanes32 adds to acc the lanes of row w (blocks of bb bytes: a binary16
// scale d, then the values, whose element e < 32 is val(block, e)) times
// the quantized input a over nb blocks: lane j of block b adds
// float32(sum_{k<4} val_{4j+k} a_{4j+k}) * (d * dx) to accumulator
// 8*(b%2)+j with one fused multiply-add, in block order. Blocks with a
// minimum (withMin: Q4_1, Q5_1, a binary16 m after d; x = d*q + m) add a
// second one, float32(c_j) * ((m * -1/128) * dx): c_j = -128 * sum_k
// a_{4j+k}, so it is the minimum's share m * dx * sum_k a_{4j+k}
// (llama.cpp takes it from the Q8_1 block's sum; the product by -1/128
// and the float32 of c_j are exact). An odd last block's zero partner
// adds 0 * 0 (twice withMin) to accumulators 8..15, as the kernels do.
func lanes32(w, a []byte, nb int, acc *[q8Lanes]float32, bb int, withMin bool, val func(wb []byte, e int) int32) {
	t := f16Table()
	for b := range q8Pairs(nb) * 2 {
		pair, h := a[(b/2)*q8ActPairBytes:(b/2+1)*q8ActPairBytes], b%2
		if b == nb {
			for j := range 8 {
				acc[8+j] = fma32(0, 0, acc[8+j])
				if withMin {
					acc[8+j] = fma32(0, 0, acc[8+j])
				}
			}
			break
		}
		wb := w[b*bb : (b+1)*bb : (b+1)*bb]
		dx := math.Float32frombits(binary.LittleEndian.Uint32(pair[128+32*h:]))
		s := t[binary.LittleEndian.Uint16(wb)] * dx
		var sm float32
		if withMin {
			sm = float32(t[binary.LittleEndian.Uint16(wb[2:])]*(-1.0/128)) * dx
		}
		for j := range 8 {
			var l int32
			for k := range 4 {
				l += val(wb, 4*j+k) * int32(int8(pair[32*h+4*j+k]))
			}
			acc[8*h+j] = fma32(float32(l), s, acc[8*h+j])
			if withMin {
				c := int32(binary.LittleEndian.Uint32(pair[64+32*h+4*j:]))
				acc[8*h+j] = fma32(float32(c), sm, acc[8*h+j])
			}
		}
	}
}

// iq4_nlLanes is q8_0Lanes for IQ4_NL rows: element e is the level of
// nibble e (iq4Levels, -127..113; the assembly looks up the level plus 128
// and starts the lane at c_j, as for Q8_0).
func iq4_nlLanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	lanes32(w, a, nb, acc, q32IQ4_NL.blockBytes(), false, func(wb []byte, e int) int32 { return int32(iq4Levels[nibble(wb[2:], e)]) })
}
