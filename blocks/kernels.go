package blocks

import "encoding/binary"

// The dot-product kernels of the hot path. Each takes one weight row in its
// storage dtype and activations x (float32, len(x) >= the row's element
// count) and returns their dot product in float32. dotF32 and dotF16 have
// AVX2/FMA/F16C assembly versions on amd64 (kernels_amd64.go); the functions
// named *Go below are the portable versions and the reference the assembly is
// tested against. All variables are set once at package init.
var (
	dotF32  = dotF32Go
	dotF16  = dotF16Go
	dotBF16 = dotBF16Go
	dotQ8_0 = dotQ8_0Go
	// axpy adds a*x[i] to y[i] for i < len(y) (len(x) >= len(y)): the
	// product rounded to float32, then the sum, in every version.
	axpy = axpyGo
	// dotF32Rows sets out[r] = dotF32(w[r*stride:r*stride+len(x)], x)
	// for r < len(out), bit for bit (attention's scores against a page of
	// keys, stride floats apart).
	dotF32Rows = func(w []float32, stride int, x []float32, out []float32) {
		for r := range out {
			out[r] = dotF32(w[r*stride:r*stride+len(x)], x)
		}
	}
	// dotF32x2 returns dotF32(a, x0) and dotF32(a, x1), bit for bit, reading
	// a once (prefill of two tokens).
	dotF32x2 = dotF32x2Go
	// gemmF32x3x4, when not nil, adds to acc the partial sums dotF32 keeps
	// (its four 8-lane accumulators) for 3 rows of a times 4 inputs of x
	// over 32*blocks elements (see gemmF32x3x4AVX2); nil where dotF32 has
	// no such accumulators (the portable kernels), and mulRows then uses
	// dotF32x2.
	gemmF32x3x4 func(a []float32, lda int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32)
	// gemmF16x3x4 is gemmF32x3x4 for binary16 rows, summed as dotF16 sums.
	gemmF16x3x4 func(w []uint16, ldw int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32)
	// gemm6x4 reports whether gemmF16x6x4 is in use: it does what two
	// gemmF16x3x4 calls do for rows 0..2 and 3..5 of w, into acc[:gemmAcc]
	// and acc[gemmAcc:], bit for bit, each input load serving 6 rows
	// (AVX-512 only: 24 accumulators and 6 rows need the 32 vector
	// registers).
	gemm6x4 bool
	// dotF16Rows sets out[r] = dotF16(w[r*cols:(r+1)*cols], x) for
	// r < len(out), bit for bit, in one call (decode's rows of a tile).
	dotF16Rows = func(w []uint16, cols int, x []float32, out []float32) {
		for r := range out {
			out[r] = dotF16(w[r*cols:(r+1)*cols], x)
		}
	}
	// cvtF16 and cvtBF16 widen src into dst[:len(src)], exactly.
	cvtF16  = cvtF16Go
	cvtBF16 = cvtBF16Go
	// kernelSet names the kernels chosen at init: "go" (portable),
	// "avx2+q32i8+f16x8", "avx2+avx512" or "avx2+avx512+vnni" (amd64, by
	// CPU feature; useGemm and useF16x8 set it).
	kernelSet = "go"
)

// Kernels names the compute kernels this process chose at start from the
// CPU's features: "go" (the portable kernels, and always under -tags
// purego), "avx2+q32i8+f16x8" (AVX2/FMA/F16C: the q32 formats' products,
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL, on 8-bit activations,
// q8avx2_amd64.s, and binary16 products summed with one 8-lane
// accumulator a row: gemm_x8.go), "avx2+avx512" (AVX-512 GEMM kernels,
// and binary16 products with dotF16AVX2's four accumulators) or
// "avx2+avx512+vnni" (and the 8-bit-activation products of the quantized
// types). Before f16x8 an AVX2-only CPU named itself "avx2", with the
// four accumulators: such a server's binary16 results differ from an
// "avx2+q32i8+f16x8" one's in the last bits. It then named itself
// "avx2+f16x8" until Q8_0 took 8-bit activations there, and
// "avx2+q8i8+f16x8" while only Q8_0 did: their Q8_0 (and then the other
// q32 formats') results differ from today's by the activations'
// rounding. Servers log it and show it in /v1/info (api.Info.Kernels);
// `swarm bench` prints it.
func Kernels() string { return kernelSet }

// The kernels are written so that widening a row and then calling dotF32 on
// it gives bit for bit the result of dotF16 or dotBF16 on the row (the same
// lanes, partial sums and order, in both the portable and the assembly
// versions); prefill relies on it to match decode exactly.

// dotF32Go is the portable float32 dot product of a and b[:len(a)], with four
// independent accumulators so that the adds pipeline.
func dotF32Go(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		aa := a[i : i+4 : i+4]
		bb := b[i : i+4 : i+4]
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotF16Go is the dot product of binary16 weights w with x[:len(w)], widening
// through a 65536-entry table.
func dotF16Go(w []uint16, x []float32) float32 {
	n := len(w)
	x = x[:n]
	t := f16Table()
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		ww := w[i : i+4 : i+4]
		xx := x[i : i+4 : i+4]
		s0 += t[ww[0]] * xx[0]
		s1 += t[ww[1]] * xx[1]
		s2 += t[ww[2]] * xx[2]
		s3 += t[ww[3]] * xx[3]
	}
	for ; i < n; i++ {
		s0 += t[w[i]] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotBF16Go is the dot product of bfloat16 weights w with x[:len(w)].
func dotBF16Go(w []uint16, x []float32) float32 {
	n := len(w)
	x = x[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		ww := w[i : i+4 : i+4]
		xx := x[i : i+4 : i+4]
		s0 += bf16ToF32(ww[0]) * xx[0]
		s1 += bf16ToF32(ww[1]) * xx[1]
		s2 += bf16ToF32(ww[2]) * xx[2]
		s3 += bf16ToF32(ww[3]) * xx[3]
	}
	for ; i < n; i++ {
		s0 += bf16ToF32(w[i]) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotQ8_0Go is the dot product of one Q8_0 row (len(w)/34 blocks of an f16
// scale d and 32 int8 values q) with x: sum over blocks of d * sum(q_j x_j).
func dotQ8_0Go(w []byte, x []float32) float32 {
	t := f16Table()
	var sum float32
	nb := len(w) / q8BlockBytes
	x = x[:nb*q8BlockSize]
	for b := range nb {
		blk := w[b*q8BlockBytes : (b+1)*q8BlockBytes : (b+1)*q8BlockBytes]
		d := t[binary.LittleEndian.Uint16(blk)]
		q := blk[2:34:34]
		xx := x[b*q8BlockSize : (b+1)*q8BlockSize : (b+1)*q8BlockSize]
		var s0, s1, s2, s3 float32
		for j := 0; j < q8BlockSize; j += 4 {
			s0 += float32(int8(q[j])) * xx[j]
			s1 += float32(int8(q[j+1])) * xx[j+1]
			s2 += float32(int8(q[j+2])) * xx[j+2]
			s3 += float32(int8(q[j+3])) * xx[j+3]
		}
		sum += d * ((s0 + s1) + (s2 + s3))
	}
	return sum
}

// dotF32x2Go is two dotF32Go calls.
func dotF32x2Go(a, x0, x1 []float32) (float32, float32) { return dotF32Go(a, x0), dotF32Go(a, x1) }

// cvtF16Go widens binary16 values through the table.
func cvtF16Go(dst []float32, src []uint16) {
	t := f16Table()
	dst = dst[:len(src)]
	for i, w := range src {
		dst[i] = t[w]
	}
}

// cvtBF16Go widens bfloat16 values.
func cvtBF16Go(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, w := range src {
		dst[i] = bf16ToF32(w)
	}
}

// axpyGo is the portable axpy.
func axpyGo(a float32, x, y []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
