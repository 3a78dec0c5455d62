package synth

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"

	"github.com/swarmllm/swarm/swarm"
)

// Reference quantizers for GGML's block types, writing llama.cpp's block
// layouts (ggml/src/ggml-common.h; the packing of quantize_row_*_ref in
// ggml/src/ggml-quants.c), and their inverses. The _0/_1 types round to
// nearest as llama.cpp's reference quantizers do; the K-quants and IQ4_XS
// take each group's scale from its min and max (no search), then quantize
// the group scales against the super-block's largest, then the values
// against the quantized scales. Quality only decides how far a file is from
// its float32 model; the files are what llama.cpp reads.
//
// The dequantizers here read element i's level and group scale by index
// (the inverse of the packing below), written apart from the engine's
// block-at-a-time kernels (blocks/quant.go), so that a synthesized file
// checks the engine's reading, and llama.cpp checks both.

// quantizer quantizes one block of values into blk; dequant inverts it.
type quantizer struct {
	quant   func(x []float32, blk []byte)
	dequant func(blk []byte, y []float32)
}

var quantizers = map[swarm.DType]quantizer{
	swarm.DTypeQ8_0:   {quantQ8_0, dequantQ8_0Block},
	swarm.DTypeQ4_0:   {quantQ4_0, dequantQ4_0},
	swarm.DTypeQ4_1:   {quantQ4_1, dequantQ4_1},
	swarm.DTypeQ5_0:   {quantQ5_0, dequantQ5_0},
	swarm.DTypeQ5_1:   {quantQ5_1, dequantQ5_1},
	swarm.DTypeQ2_K:   {quantQ2_K, dequantQ2_K},
	swarm.DTypeQ3_K:   {quantQ3_K, dequantQ3_K},
	swarm.DTypeQ4_K:   {quantQ4_K, dequantQ4_K},
	swarm.DTypeQ5_K:   {quantQ5_K, dequantQ5_K},
	swarm.DTypeQ6_K:   {quantQ6_K, dequantQ6_K},
	swarm.DTypeIQ4_NL: {quantIQ4_NL, dequantIQ4_NL},
	swarm.DTypeIQ4_XS: {quantIQ4_XS, dequantIQ4_XS},
}

// quantize stores v (whole blocks of dt) as dt's blocks.
func quantize(v []float32, dt swarm.DType) []byte {
	q := quantizers[dt]
	bs := dt.BlockSize()
	bb := int(dt.Bytes(int64(bs)))
	out := make([]byte, len(v)/bs*bb)
	for b := range len(v) / bs {
		q.quant(v[b*bs:(b+1)*bs], out[b*bb:(b+1)*bb])
	}
	return out
}

// dequantize expands dt's blocks in q into v.
func dequantize(q []byte, dt swarm.DType, v []float32) {
	d := quantizers[dt].dequant
	bs := dt.BlockSize()
	bb := int(dt.Bytes(int64(bs)))
	for b := range len(q) / bb {
		d(q[b*bb:(b+1)*bb], v[b*bs:(b+1)*bs])
	}
}

func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, float16.Fromfloat32(f).Bits()) }
func getHalf(b []byte) float32    { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

// roundClamp rounds x to the nearest integer within [lo, hi].
func roundClamp(x float32, lo, hi int) int {
	r := math.Round(float64(x))
	if r != r {
		return lo
	}
	return int(max(float64(lo), min(float64(hi), r)))
}

// signedMax returns the value of largest magnitude (keeping its sign).
func signedMax(x []float32) float32 {
	var m float32
	for _, v := range x {
		if abs32(v) > abs32(m) {
			m = v
		}
	}
	return m
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

func minMax(x []float32) (lo, hi float32) {
	lo, hi = x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// inv is 1/d, or 0 for d = 0.
func inv(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

func quantQ8_0(x []float32, blk []byte) {
	copy(blk, quantizeQ8_0(x))
}

func dequantQ8_0Block(blk []byte, y []float32) { dequantizeQ8_0(blk, y) }

// Q4_0 {d; qs[16]}: element j < 16 in the low nibble of qs[j], j >= 16 in
// the high nibble of qs[j-16]; x = d*(q-8), d = (signed max)/-8.
func quantQ4_0(x []float32, blk []byte) {
	d := signedMax(x) / -8
	putHalf(blk, d)
	id := inv(d)
	for j := range 16 {
		blk[2+j] = byte(roundClamp(x[j]*id+8, 0, 15)) | byte(roundClamp(x[j+16]*id+8, 0, 15))<<4
	}
}

func nibble(qs []byte, j int) int { return int(qs[j%16]>>(4*(j/16))) & 15 }

func dequantQ4_0(blk []byte, y []float32) {
	d := getHalf(blk)
	for j := range 32 {
		y[j] = d * float32(nibble(blk[2:], j)-8)
	}
}

// Q4_1 {d; m; qs[16]}: x = d*q + m, m = min, d = (max-min)/15.
func quantQ4_1(x []float32, blk []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 15
	putHalf(blk, d)
	putHalf(blk[2:], lo)
	m, id := getHalf(blk[2:]), inv(getHalf(blk))
	for j := range 16 {
		blk[4+j] = byte(roundClamp((x[j]-m)*id, 0, 15)) | byte(roundClamp((x[j+16]-m)*id, 0, 15))<<4
	}
}

func dequantQ4_1(blk []byte, y []float32) {
	d, m := getHalf(blk), getHalf(blk[2:])
	for j := range 32 {
		y[j] = d*float32(nibble(blk[4:], j)) + m
	}
}

// Q5_0 {d; qh uint32; qs[16]}: low 4 bits as Q4_0, bit j of qh the fifth
// bit of element j; x = d*(q-16), d = (signed max)/-16.
func quantQ5_0(x []float32, blk []byte) {
	d := signedMax(x) / -16
	putHalf(blk, d)
	id := inv(d)
	var qh uint32
	var l [32]int
	for j := range 32 {
		l[j] = roundClamp(x[j]*id+16, 0, 31)
		qh |= uint32(l[j]>>4) << j
	}
	binary.LittleEndian.PutUint32(blk[2:], qh)
	for j := range 16 {
		blk[6+j] = byte(l[j]&15) | byte(l[j+16]&15)<<4
	}
}

func fifth(blk []byte, off, j int) int { return int(binary.LittleEndian.Uint32(blk[off:])>>j&1) << 4 }

func dequantQ5_0(blk []byte, y []float32) {
	d := getHalf(blk)
	for j := range 32 {
		y[j] = d * float32(nibble(blk[6:], j)|fifth(blk, 2, j)-16)
	}
}

// Q5_1 {d; m; qh; qs[16]}: x = d*q + m, d = (max-min)/31.
func quantQ5_1(x []float32, blk []byte) {
	lo, hi := minMax(x)
	putHalf(blk, (hi-lo)/31)
	putHalf(blk[2:], lo)
	m, id := getHalf(blk[2:]), inv(getHalf(blk))
	var qh uint32
	var l [32]int
	for j := range 32 {
		l[j] = roundClamp((x[j]-m)*id, 0, 31)
		qh |= uint32(l[j]>>4) << j
	}
	binary.LittleEndian.PutUint32(blk[4:], qh)
	for j := range 16 {
		blk[8+j] = byte(l[j]&15) | byte(l[j+16]&15)<<4
	}
}

func dequantQ5_1(blk []byte, y []float32) {
	d, m := getHalf(blk), getHalf(blk[2:])
	for j := range 32 {
		y[j] = d*float32(nibble(blk[8:], j)|fifth(blk, 4, j)) + m
	}
}

// iq4Levels is kvalues_iq4nl (ggml-common.h).
var iq4Levels = [16]float32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// nearestLevel is the index of the IQ4 level nearest to v: the number of
// midpoints between adjacent levels that v reaches (a binary search over
// the sorted levels, as llama.cpp's best_index_int8).
func nearestLevel(v float32) int {
	i := 0
	for step := 8; step > 0; step /= 2 {
		if j := i + step; v+v >= iq4Levels[j-1]+iq4Levels[j] {
			i = j
		}
	}
	return i
}

// IQ4_NL {d; qs[16]}: nibbles as Q4_0, x = d*iq4Levels[q], d = (signed
// max)/-127 so that the largest value is the level -127.
func quantIQ4_NL(x []float32, blk []byte) {
	d := signedMax(x) / -127
	putHalf(blk, d)
	id := inv(getHalf(blk))
	for j := range 16 {
		blk[2+j] = byte(nearestLevel(x[j]*id)) | byte(nearestLevel(x[j+16]*id))<<4
	}
}

func dequantIQ4_NL(blk []byte, y []float32) {
	d := getHalf(blk)
	for j := range 32 {
		y[j] = d * iq4Levels[nibble(blk[2:], j)]
	}
}

// kGroups computes, for the groups of n values of a super-block, the scale
// and min of an asymmetric nmax-level fit (min = -min(0, lo), scale =
// (hi + min)/nmax), then quantizes both to qmax steps of the largest:
// ls, lm in 0..qmax with d = maxScale/qmax and dmin = maxMin/qmax.
func kGroups(x []float32, n, nmax, qmax int) (ls, lm []int, d, dmin float32) {
	groups := len(x) / n
	scales, mins := make([]float32, groups), make([]float32, groups)
	var maxScale, maxMin float32
	for g := range groups {
		lo, hi := minMax(x[g*n : (g+1)*n])
		lo = min(lo, 0)
		scales[g], mins[g] = (hi-lo)/float32(nmax), -lo
		maxScale, maxMin = max(maxScale, scales[g]), max(maxMin, mins[g])
	}
	d, dmin = maxScale/float32(qmax), maxMin/float32(qmax)
	ls, lm = make([]int, groups), make([]int, groups)
	for g := range groups {
		ls[g] = roundClamp(scales[g]*inv(d), 0, qmax)
		lm[g] = roundClamp(mins[g]*inv(dmin), 0, qmax)
	}
	return ls, lm, d, dmin
}

// kLevels quantizes each value against its group's stored scale and min:
// q = round((x + dmin*lm)/(d*ls)) in 0..nmax.
func kLevels(x []float32, n, nmax int, ls, lm []int, d, dmin float32) []int {
	l := make([]int, len(x))
	for i, v := range x {
		g := i / n
		if sc := d * float32(ls[g]); sc != 0 {
			l[i] = roundClamp((v+dmin*float32(lm[g]))/sc, 0, nmax)
		}
	}
	return l
}

// Q2_K {scales[16]; qs[64]; d; dmin}: group g of 16 has scales[g] = ls |
// lm<<4; element i's 2 bits are at qs[32*(i/128) + i%32], shift
// 2*((i%128)/32); x = d*ls*q - dmin*lm.
func quantQ2_K(x []float32, blk []byte) {
	ls, lm, d, dmin := kGroups(x, 16, 3, 15)
	putHalf(blk[80:], d)
	putHalf(blk[82:], dmin)
	l := kLevels(x, 16, 3, ls, lm, getHalf(blk[80:]), getHalf(blk[82:]))
	for g := range 16 {
		blk[g] = byte(ls[g] | lm[g]<<4)
	}
	clear(blk[16:80])
	for i, q := range l {
		blk[16+32*(i/128)+i%32] |= byte(q) << (2 * ((i % 128) / 32))
	}
}

func q2Bits(qs []byte, i int) int { return int(qs[32*(i/128)+i%32]>>(2*((i%128)/32))) & 3 }

func dequantQ2_K(blk []byte, y []float32) {
	d, dmin := getHalf(blk[80:]), getHalf(blk[82:])
	for i := range 256 {
		sc := blk[i/16]
		y[i] = d*float32(sc&15)*float32(q2Bits(blk[16:], i)) - dmin*float32(sc>>4)
	}
}

// Q3_K {hmask[32]; qs[64]; scales[12]; d}: signed 6-bit group scales
// (stored +32; low nibble of scale g in byte g%8 at bit 4*(g/8), top 2
// bits in byte 8+g%4 at bit 2*(g/4)); levels q+4 in 0..7 with the low 2
// bits as Q2_K and the third in bit i/32 of hmask[i%32]; x = d*sc*q.
func quantQ3_K(x []float32, blk []byte) {
	var s [16]float32
	var smax float32
	for g := range 16 {
		s[g] = signedMax(x[16*g:16*g+16]) / -4
		if abs32(s[g]) > abs32(smax) {
			smax = s[g]
		}
	}
	d := smax / -32
	putHalf(blk[108:], d)
	d = getHalf(blk[108:])
	clear(blk[:108])
	var sc [16]int
	for g := range 16 {
		sc[g] = roundClamp(s[g]*inv(d), -32, 31)
		u := byte(sc[g] + 32)
		blk[96+g%8] |= (u & 15) << (4 * (g / 8))
		blk[96+8+g%4] |= (u >> 4) << (2 * (g / 4))
	}
	for i := range 256 {
		q := 0
		if dl := d * float32(sc[i/16]); dl != 0 {
			q = roundClamp(x[i]/dl, -4, 3)
		}
		u := q + 4
		if u > 3 {
			blk[i%32] |= 1 << (i / 32)
		}
		blk[32+32*(i/128)+i%32] |= byte(u&3) << (2 * ((i % 128) / 32))
	}
}

func dequantQ3_K(blk []byte, y []float32) {
	d := getHalf(blk[108:])
	for i := range 256 {
		g := i / 16
		u := int(blk[96+g%8]>>(4*(g/8))&15) | int(blk[96+8+g%4]>>(2*(g/4))&3)<<4
		q := q2Bits(blk[32:], i) | int(blk[i%32]>>(i/32)&1)<<2
		y[i] = d * float32(u-32) * float32(q-4)
	}
}

// putKScales packs eight 6-bit scales and mins as block_q4_K/q5_K do
// (llama.cpp's quantize_row_q4_K_ref): groups 0..3 in the low 6 bits of
// bytes g and g+4, groups 4..7 in the nibbles of byte g+4 with their top 2
// bits in the top bits of bytes g-4 (scale) and g (min).
func putKScales(s []byte, ls, lm []int) {
	clear(s[:12])
	for g := range 8 {
		if g < 4 {
			s[g] |= byte(ls[g])
			s[g+4] |= byte(lm[g])
			continue
		}
		s[g+4] = byte(ls[g]&15 | (lm[g]&15)<<4)
		s[g-4] |= byte(ls[g]>>4) << 6
		s[g] |= byte(lm[g]>>4) << 6
	}
}

func kScales(s []byte, g int) (ls, lm int) {
	if g < 4 {
		return int(s[g] & 63), int(s[g+4] & 63)
	}
	return int(s[g+4]&15) | int(s[g-4]>>6)<<4, int(s[g+4]>>4) | int(s[g]>>6)<<4
}

// Q4_K {d; dmin; scales[12]; qs[128]}: group g of 32; element i's nibble
// in qs[32*(i/64) + i%32], the high nibble when (i%64) >= 32; x = d*ls*q -
// dmin*lm.
func quantQ4_K(x []float32, blk []byte) {
	ls, lm, d, dmin := kGroups(x, 32, 15, 63)
	putHalf(blk, d)
	putHalf(blk[2:], dmin)
	putKScales(blk[4:], ls, lm)
	l := kLevels(x, 32, 15, ls, lm, getHalf(blk), getHalf(blk[2:]))
	clear(blk[16:144])
	for i, q := range l {
		blk[16+32*(i/64)+i%32] |= byte(q) << (4 * ((i % 64) / 32))
	}
}

func q4Bits(qs []byte, i int) int { return int(qs[32*(i/64)+i%32]>>(4*((i%64)/32))) & 15 }

func dequantQ4_K(blk []byte, y []float32) {
	d, dmin := getHalf(blk), getHalf(blk[2:])
	for i := range 256 {
		ls, lm := kScales(blk[4:], i/32)
		y[i] = d*float32(ls)*float32(q4Bits(blk[16:], i)) - dmin*float32(lm)
	}
}

// Q5_K {d; dmin; scales[12]; qh[32]; qs[128]}: Q4_K's low 4 bits, the
// fifth in bit i/32 of qh[i%32].
func quantQ5_K(x []float32, blk []byte) {
	ls, lm, d, dmin := kGroups(x, 32, 31, 63)
	putHalf(blk, d)
	putHalf(blk[2:], dmin)
	putKScales(blk[4:], ls, lm)
	l := kLevels(x, 32, 31, ls, lm, getHalf(blk), getHalf(blk[2:]))
	clear(blk[16:176])
	for i, q := range l {
		blk[48+32*(i/64)+i%32] |= byte(q&15) << (4 * ((i % 64) / 32))
		blk[16+i%32] |= byte(q>>4) << (i / 32)
	}
}

func dequantQ5_K(blk []byte, y []float32) {
	d, dmin := getHalf(blk), getHalf(blk[2:])
	for i := range 256 {
		ls, lm := kScales(blk[4:], i/32)
		q := q4Bits(blk[48:], i) | int(blk[16+i%32]>>(i/32)&1)<<4
		y[i] = d*float32(ls)*float32(q) - dmin*float32(lm)
	}
}

// Q6_K {ql[128]; qh[64]; scales[16] int8; d}: group g of 16 has scale
// scales[g]; element i (h = i/128, k = (i%128)/32, l = i%32) has its low
// nibble in ql[64h + 32*(k%2) + l] (high nibble for k >= 2) and its top 2
// bits in qh[32h + l] at bit 2k; x = d*sc*(q-32).
func quantQ6_K(x []float32, blk []byte) {
	var s [16]float32
	var smax float32
	for g := range 16 {
		s[g] = signedMax(x[16*g:16*g+16]) / -32
		if abs32(s[g]) > abs32(smax) {
			smax = s[g]
		}
	}
	d := smax / -128
	putHalf(blk[208:], d)
	d = getHalf(blk[208:])
	clear(blk[:208])
	var sc [16]int
	for g := range 16 {
		sc[g] = roundClamp(s[g]*inv(d), -128, 127)
		blk[192+g] = byte(int8(sc[g]))
	}
	for i := range 256 {
		q := 0
		if dl := d * float32(sc[i/16]); dl != 0 {
			q = roundClamp(x[i]/dl, -32, 31)
		}
		u := byte(q + 32)
		h, k, l := i/128, (i%128)/32, i%32
		blk[64*h+32*(k%2)+l] |= (u & 15) << (4 * (k / 2))
		blk[128+32*h+l] |= (u >> 4) << (2 * k)
	}
}

func dequantQ6_K(blk []byte, y []float32) {
	d := getHalf(blk[208:])
	for i := range 256 {
		h, k, l := i/128, (i%128)/32, i%32
		q := int(blk[64*h+32*(k%2)+l]>>(4*(k/2))&15) | int(blk[128+32*h+l]>>(2*k)&3)<<4
		y[i] = d * float32(int8(blk[192+i/16])) * float32(q-32)
	}
}

// IQ4_XS {d; scales_h uint16; scales_l[4]; qs[128]}: group g of 32 has the
// 6-bit scale ls (stored +32; low nibble g%2 of scales_l[g/2], top 2 bits
// at bit 2g of scales_h) and IQ4_NL nibbles in qs[16g:16g+16]; x =
// d*(ls-32)*iq4Levels[q].
func quantIQ4_XS(x []float32, blk []byte) {
	var s [8]float32
	var smax float32
	for g := range 8 {
		s[g] = signedMax(x[32*g:32*g+32]) / -127
		if abs32(s[g]) > abs32(smax) {
			smax = s[g]
		}
	}
	putHalf(blk, smax/-32)
	d := getHalf(blk)
	clear(blk[2:136])
	var sh uint16
	for g := range 8 {
		ls := roundClamp(s[g]*inv(d), -32, 31)
		u := ls + 32
		blk[4+g/2] |= byte(u&15) << (4 * (g % 2))
		sh |= uint16(u>>4) << (2 * g)
		id := inv(d * float32(ls))
		for j := range 16 {
			blk[8+16*g+j] = byte(nearestLevel(x[32*g+j]*id)) | byte(nearestLevel(x[32*g+j+16]*id))<<4
		}
	}
	binary.LittleEndian.PutUint16(blk[2:], sh)
}

func dequantIQ4_XS(blk []byte, y []float32) {
	d := getHalf(blk)
	sh := binary.LittleEndian.Uint16(blk[2:])
	for i := range 256 {
		g := i / 32
		ls := int(blk[4+g/2]>>(4*(g%2))&15) | int(sh>>(2*g)&3)<<4
		y[i] = d * float32(ls-32) * iq4Levels[nibble(blk[8+16*g:], i%32)]
	}
}
