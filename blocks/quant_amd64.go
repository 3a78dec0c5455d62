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

func init() {
	if simdKernels {
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
