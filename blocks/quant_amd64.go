//go:build amd64 && !purego

package blocks

import "encoding/binary"

// AVX2/FMA kernels of the quantized types (quant_amd64.s), installed at
// init where the CPU has them (simdKernels, kernels_amd64.go). They sum in
// a different order than the portable dequantize-then-dotF32 path
// (dotQuant), so the two agree to float32 rounding, not bit for bit
// (TestDotKernels).

//go:noescape
func dotQ4KBlockAVX2(qs *byte, x *float32, sm *[16]float32) float32

//go:noescape
func dotQ6KBlockAVX2(blk *byte, x *float32, sm *[16]float32) float32

//go:noescape
func dotQ5KBlockAVX2(blk *byte, x *float32, sm *[16]float32) float32

//go:noescape
func dot4NLGroupsAVX2(qs *byte, stride int, sc *[8]float32, x *float32, n int, levels *[16]int8) float32

// q4_0Levels and iq4Levels8 are the values of the 16 nibbles of Q4_0
// (q - 8) and of IQ4_NL/IQ4_XS (kvalues_iq4nl), for VPSHUFB.
var (
	q4_0Levels = [16]int8{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}
	iq4Levels8 = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
)

func init() {
	if simdKernels {
		dotQ4_0 = func(w []byte, x []float32) float32 { return dot4NL32AVX2(w, x, &q4_0Levels) }
		dotIQ4_NL = func(w []byte, x []float32) float32 { return dot4NL32AVX2(w, x, &iq4Levels8) }
		dotIQ4_XS = dotIQ4_XSAVX2
		dotQ4_K = func(w []byte, x []float32) float32 { return dotQ45_KAVX2(w, x, 144) }
		dotQ5_K = func(w []byte, x []float32) float32 { return dotQ45_KAVX2(w, x, 176) }
		dotQ6_K = dotQ6_KAVX2
	}
}

// dotQ45_KAVX2 is the dot product of a Q4_K (bb = 144 bytes a block) or
// Q5_K (bb = 176) row with x: per super-block the eight groups' scales
// d*sc and mins dmin*m are unpacked here, the products summed in the
// assembly.
func dotQ45_KAVX2(w []byte, x []float32, bb int) float32 {
	nb := len(w) / bb
	x = x[:nb*256]
	var sm [16]float32
	var sum float32
	t := f16Table()
	for b := range nb {
		blk := w[b*bb : (b+1)*bb : (b+1)*bb]
		d, dmin := t[binary.LittleEndian.Uint16(blk)], t[binary.LittleEndian.Uint16(blk[2:])]
		for g := range 8 {
			sc, m := kScaleMin(blk[4:16], g)
			sm[2*g], sm[2*g+1] = d*sc, dmin*m
		}
		if bb == 144 {
			sum += dotQ4KBlockAVX2(&blk[16], &x[b*256], &sm)
		} else {
			sum += dotQ5KBlockAVX2(&blk[0], &x[b*256], &sm)
		}
	}
	return sum
}

// dotQ6_KAVX2 is the dot product of a Q6_K row with x: per super-block the
// sixteen group scales d*scales[g] are computed here, the products summed
// in the assembly.
func dotQ6_KAVX2(w []byte, x []float32) float32 {
	const bb = 210
	nb := len(w) / bb
	x = x[:nb*256]
	var sm [16]float32
	var sum float32
	t := f16Table()
	for b := range nb {
		blk := w[b*bb : (b+1)*bb : (b+1)*bb]
		d := t[binary.LittleEndian.Uint16(blk[208:])]
		for g := range 16 {
			sm[g] = d * float32(int8(blk[192+g]))
		}
		sum += dotQ6KBlockAVX2(&blk[0], &x[b*256], &sm)
	}
	return sum
}

// dot4NL32AVX2 is the dot product of a row of 18-byte blocks {d f16; qs
// [16]byte} (Q4_0, IQ4_NL) with x, the nibbles taking the values levels.
func dot4NL32AVX2(w []byte, x []float32, levels *[16]int8) float32 {
	const bb = 18
	nb := len(w) / bb
	x = x[:nb*32]
	var sc [8]float32
	var sum float32
	for b := 0; b < nb; b += 8 {
		n := min(8, nb-b)
		for i := range n {
			sc[i] = halfAt(w, (b+i)*bb)
		}
		sum += dot4NLGroupsAVX2(&w[b*bb+2], bb, &sc, &x[b*32], n, levels)
	}
	return sum
}

// dotIQ4_XSAVX2 is the dot product of an IQ4_XS row with x: per
// super-block the eight groups' scales d*(ls-32) are unpacked here.
func dotIQ4_XSAVX2(w []byte, x []float32) float32 {
	const bb = 136
	nb := len(w) / bb
	x = x[:nb*256]
	var sc [8]float32
	var sum float32
	for b := range nb {
		blk := w[b*bb : (b+1)*bb : (b+1)*bb]
		d := halfAt(blk, 0)
		sh := binary.LittleEndian.Uint16(blk[2:])
		for g := range 8 {
			ls := int(blk[4+g/2]>>(4*(g%2))&15) | int(sh>>(2*g)&3)<<4
			sc[g] = d * float32(ls-32)
		}
		sum += dot4NLGroupsAVX2(&blk[8], 16, &sc, &x[b*256], 8, &iq4Levels8)
	}
	return sum
}
