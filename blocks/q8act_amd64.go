//go:build amd64 && !purego

package blocks

import "golang.org/x/sys/cpu"

// The kernels of q8gemm_amd64.s: the q32 formats (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, IQ4_NL) times 8-bit activations.

//go:noescape
func q8_0x3x4AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool)

//go:noescape
func q8_0x1x1AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)

//go:noescape
func q8_0RowsAVX512(w []byte, ldw int, a []byte, units int, nrows int, out []float32)

//go:noescape
func q4_0x3x4AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool)

//go:noescape
func q4_0x1x1AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)

//go:noescape
func q4_0RowsAVX512(w []byte, ldw int, a []byte, units int, nrows int, out []float32)

//go:noescape
func q4_1x3x4AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool)

//go:noescape
func q4_1x1x1AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)

//go:noescape
func q4_1RowsAVX512(w []byte, ldw int, a []byte, units int, nrows int, out []float32)

//go:noescape
func q5_0x3x4AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool)

//go:noescape
func q5_0x1x1AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)

//go:noescape
func q5_0RowsAVX512(w []byte, ldw int, a []byte, units int, nrows int, out []float32)

//go:noescape
func q5_1x3x4AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool)

//go:noescape
func q5_1x1x1AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)

//go:noescape
func q5_1RowsAVX512(w []byte, ldw int, a []byte, units int, nrows int, out []float32)

//go:noescape
func iq4_nlx3x4AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool)

//go:noescape
func iq4_nlx1x1AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)

//go:noescape
func iq4_nlRowsAVX512(w []byte, ldw int, a []byte, units int, nrows int, out []float32)

//go:noescape
func reduceQ8x12AVX2(acc *[3 * 4 * q8Lanes]float32, out *[12]float32)

// reduceQ8x12 writes reduceLanes of each of the 12 outputs of acc to out.
func reduceQ8x12(acc *[3 * 4 * q8Lanes]float32, out *[12]float32) {
	if !q8Tiles {
		reduceQ8x12Go(acc, out)
		return
	}
	reduceQ8x12AVX2(acc, out)
}

// vnniKernels reports whether the VNNI kernels are in use: AVX-512 F, BW
// and VNNI (VPDPBUSD on 512-bit registers).
var vnniKernels = avx512Kernels && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// eightBitActivations reports whether the products of q8Dtypes (every
// quantized type) take 8-bit activations (prepareInputs): only with the
// VNNI kernels. Without them the portable twins would be slower than the
// AVX2 kernels on float32 activations, which those CPUs keep using for
// the K-quants and IQ4_XS (with results that differ from the 8-bit ones
// by the activations' rounding); the q32 formats take 8-bit activations
// there too (eightBitQ32).
var eightBitActivations = vnniKernels

// eightBitQ32 reports whether the q32 formats (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, IQ4_NL) take 8-bit activations on a CPU without the VNNI kernels:
// the AVX2 kernels of q8avx2_amd64.s, whose lanes are the VNNI kernels'
// bit for bit (and llama.cpp's products, to float32 rounding). On a
// 2-core Zen 3 a TinyLlama-shaped Q8_0 block-step took 13.9 -> 7.7 ms at
// batch 4 and 28.6 -> 24.6 at 16 against the float32 activations' 8- and
// 4-input tiles, and 4.1 -> 3.2 ms at batch 1.
var eightBitQ32 = !vnniKernels && simdKernels

// q8Tiles reports whether mulRowsQ8 should group rows and inputs in 3x4
// tiles: only the assembly tile is faster than one output at a time.
var q8Tiles = vnniKernels || eightBitQ32

//go:noescape
func q8_0x1x4Q8AVX2(w []byte, a []byte, lda int, nb int, acc *[4 * q8Lanes]float32)

//go:noescape
func q8_0x1x1Q8AVX2(w []byte, a []byte, nb int, acc *[q8Lanes]float32)

//go:noescape
func q8_0RowsQ8AVX2(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)

//go:noescape
func q4_0x1x4Q8AVX2(w []byte, a []byte, lda int, nb int, acc *[4 * q8Lanes]float32)

//go:noescape
func q4_0x1x1Q8AVX2(w []byte, a []byte, nb int, acc *[q8Lanes]float32)

//go:noescape
func q4_0RowsQ8AVX2(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)

//go:noescape
func q4_1x1x4Q8AVX2(w []byte, a []byte, lda int, nb int, acc *[4 * q8Lanes]float32)

//go:noescape
func q4_1x1x1Q8AVX2(w []byte, a []byte, nb int, acc *[q8Lanes]float32)

//go:noescape
func q4_1RowsQ8AVX2(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)

//go:noescape
func q5_0x1x4Q8AVX2(w []byte, a []byte, lda int, nb int, acc *[4 * q8Lanes]float32)

//go:noescape
func q5_0x1x1Q8AVX2(w []byte, a []byte, nb int, acc *[q8Lanes]float32)

//go:noescape
func q5_0RowsQ8AVX2(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)

//go:noescape
func q5_1x1x4Q8AVX2(w []byte, a []byte, lda int, nb int, acc *[4 * q8Lanes]float32)

//go:noescape
func q5_1x1x1Q8AVX2(w []byte, a []byte, nb int, acc *[q8Lanes]float32)

//go:noescape
func q5_1RowsQ8AVX2(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)

//go:noescape
func iq4_nlx1x4Q8AVX2(w []byte, a []byte, lda int, nb int, acc *[4 * q8Lanes]float32)

//go:noescape
func iq4_nlx1x1Q8AVX2(w []byte, a []byte, nb int, acc *[q8Lanes]float32)

//go:noescape
func iq4_nlRowsQ8AVX2(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)

// q32AVX2 are the AVX2 kernels of each q32 format (q8avx2_amd64.s): x4
// adds to acc[16t:] the accumulators of one row times 4 inputs lda bytes
// apart, x1 one row times one input, rows sets out[r] to the product of
// each of nrows rows ldw bytes apart with one input.
var q32AVX2 = [...]struct {
	x4   func(w []byte, a []byte, lda int, nb int, acc *[4 * q8Lanes]float32)
	x1   func(w []byte, a []byte, nb int, acc *[q8Lanes]float32)
	rows func(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)
}{
	q32Q8_0:   {q8_0x1x4Q8AVX2, q8_0x1x1Q8AVX2, q8_0RowsQ8AVX2},
	q32Q4_0:   {q4_0x1x4Q8AVX2, q4_0x1x1Q8AVX2, q4_0RowsQ8AVX2},
	q32Q4_1:   {q4_1x1x4Q8AVX2, q4_1x1x1Q8AVX2, q4_1RowsQ8AVX2},
	q32Q5_0:   {q5_0x1x4Q8AVX2, q5_0x1x1Q8AVX2, q5_0RowsQ8AVX2},
	q32Q5_1:   {q5_1x1x4Q8AVX2, q5_1x1x1Q8AVX2, q5_1RowsQ8AVX2},
	q32IQ4_NL: {iq4_nlx1x4Q8AVX2, iq4_nlx1x1Q8AVX2, iq4_nlRowsQ8AVX2},
}

// tileAVX2 is f's 3x4 tile with the AVX2 kernel: each of the 3 rows
// times the 4 inputs.
func (f q32) tileAVX2(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	if zero {
		clear(acc[:])
	}
	x4 := q32AVX2[f].x4
	for r := range 3 {
		x4(w[r*ldw:], a, lda, nb, (*[4 * q8Lanes]float32)(acc[r*4*q8Lanes:]))
	}
}

// q4_KTile adds to acc (zero: to zeros instead) the accumulators of
// Q4_K row w times the Q8_K inputs t < T (lda bytes apart), output t,
// over nsb blocks of 256, exactly as q4_KLanes would; when out is not
// empty it sets out[t*ldo] to their reduceLanes instead of storing them.
func q4_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTile(&q4_KTilesAVX512, q4KBlockBytes, q4_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q4_KRows sets out[r] to the product of Q4_K row r (ldw bytes apart)
// and the Q8_K input a, as q4_KDotGo would.
func q4_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	kRows(q4_KRowsAVX512, q4KBlockBytes, q4_KLanes, w, ldw, a, nsb, out)
}

// q6_KTile adds to acc (zero: to zeros instead) the accumulators of
// Q6_K row w times the Q8_K inputs t < T (lda bytes apart), output t,
// over nsb blocks of 256, exactly as q6_KLanes would; when out is not
// empty it sets out[t*ldo] to their reduceLanes instead of storing them.
func q6_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTile(&q6_KTilesAVX512, q6KBlockBytes, q6_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// iq4_XSTile is q6_KTile for IQ4_XS rows, exactly as iq4_XSLanes would.
func iq4_XSTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTile(&iq4_xsTilesAVX512, iq4XSBlockBytes, iq4_XSLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// iq4_XSRows is q6_KRows for IQ4_XS rows, as iq4_XSDotGo would.
func iq4_XSRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	kRows(iq4_xsRowsAVX512, iq4XSBlockBytes, iq4_XSLanes, w, ldw, a, nsb, out)
}

// q6_KRows sets out[r] to the product of Q6_K row r (ldw bytes apart)
// and the Q8_K input a, as q6_KDotGo would.
func q6_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	kRows(q6_KRowsAVX512, q6KBlockBytes, q6_KLanes, w, ldw, a, nsb, out)
}

// q5_KTile is q4_KTile for Q5_K rows, exactly as q5_KLanes would.
func q5_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTile(&q5_KTilesAVX512, q5KBlockBytes, q5_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q5_KRows sets out[r] to the product of Q5_K row r (ldw bytes apart)
// and the Q8_K input a, as q5_KDotGo would.
func q5_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	kRows(q5_KRowsAVX512, q5KBlockBytes, q5_KLanes, w, ldw, a, nsb, out)
}

// q3_KTile is q6_KTile for Q3_K rows, exactly as q3_KLanes would.
func q3_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTile(&q3_KTilesAVX512, q3KBlockBytes, q3_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q3_KRows sets out[r] to the product of Q3_K row r (ldw bytes apart)
// and the Q8_K input a, as q3_KDotGo would.
func q3_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	kRows(q3_KRowsAVX512, q3KBlockBytes, q3_KLanes, w, ldw, a, nsb, out)
}

// q2_KTile is q4_KTile for Q2_K rows, exactly as q2_KLanes would.
func q2_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTile(&q2_KTilesAVX512, q2KBlockBytes, q2_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q2_KRows sets out[r] to the product of Q2_K row r (ldw bytes apart)
// and the Q8_K input a, as q2_KDotGo would.
func q2_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	kRows(q2_KRowsAVX512, q2KBlockBytes, q2_KLanes, w, ldw, a, nsb, out)
}

// kTile runs tiles[T], the assembly tile of a K-quant whose blocks are bb
// bytes, after bounding its reads, or kTileGo with the type's portable
// lanes where the VNNI kernels are not in use (see q4_KTile).
func kTile(tiles *[kTileInputs + 1]func(w []byte, a []byte, lda int, nsb int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int),
	bb int, lanes kLanesFunc, w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	if !vnniKernels {
		kTileGo(lanes, w, a, lda, nsb, T, acc, zero, out, ldo)
		return
	}
	_ = w[nsb*bb-1]
	_ = a[(T-1)*lda+nsb*q8KBlockBytes-1]
	if len(out) > 0 {
		_ = out[(T-1)*ldo]
	}
	tiles[T](w, a, lda, nsb, acc, zero, out, ldo)
}

// kRows runs rows, the assembly rows kernel of a K-quant whose blocks are
// bb bytes, after bounding its reads, or the portable lanes row by row
// (see q4_KRows).
func kRows(rows func(w []byte, ldw int, a []byte, units int, nrows int, out []float32),
	bb int, lanes kLanesFunc, w []byte, ldw int, a []byte, nsb int, out []float32) {
	if !vnniKernels || len(out) == 0 || nsb == 0 {
		for r := range out {
			out[r] = kDotGo(lanes, w[r*ldw:], a, nsb)
		}
		return
	}
	_ = w[(len(out)-1)*ldw+nsb*bb-1]
	_ = a[nsb*q8KBlockBytes-1]
	rows(w, ldw, a, nsb, len(out), out)
}

// tile adds to acc (zero: to zeros instead) the accumulators of 3 rows of
// f (ldw bytes apart) times 4 inputs (lda bytes apart), output r*4+t,
// exactly as f.lanes would.
func (f q32) tile(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	avx2 := eightBitQ32
	if !vnniKernels && !avx2 {
		f.tileGo(w, ldw, a, lda, nb, acc, zero)
		return
	}
	// Bound the reads: rows 0..2 and inputs 0..3 of nb blocks.
	_ = w[2*ldw+nb*f.blockBytes()-1]
	_ = a[3*lda+q8Pairs(nb)*q8ActPairBytes-1]
	if avx2 {
		f.tileAVX2(w, ldw, a, lda, nb, acc, zero)
		return
	}
	switch f {
	case q32Q8_0:
		q8_0x3x4AVX512(w, ldw, a, lda, nb, acc, zero)
	case q32Q4_0:
		q4_0x3x4AVX512(w, ldw, a, lda, nb, acc, zero)
	case q32Q4_1:
		q4_1x3x4AVX512(w, ldw, a, lda, nb, acc, zero)
	case q32Q5_0:
		q5_0x3x4AVX512(w, ldw, a, lda, nb, acc, zero)
	case q32Q5_1:
		q5_1x3x4AVX512(w, ldw, a, lda, nb, acc, zero)
	case q32IQ4_NL:
		iq4_nlx3x4AVX512(w, ldw, a, lda, nb, acc, zero)
	}
}

// row adds to acc the accumulators of row w of f times input a, as
// f.lanes would.
func (f q32) row(w, a []byte, nb int, acc *[q8Lanes]float32) {
	avx2 := eightBitQ32
	if !vnniKernels && !avx2 {
		f.lanes(w, a, nb, acc)
		return
	}
	_ = w[nb*f.blockBytes()-1]
	_ = a[q8Pairs(nb)*q8ActPairBytes-1]
	if avx2 {
		q32AVX2[f].x1(w, a, nb, acc)
		return
	}
	switch f {
	case q32Q8_0:
		q8_0x1x1AVX512(w, 0, a, 0, nb, acc)
	case q32Q4_0:
		q4_0x1x1AVX512(w, 0, a, 0, nb, acc)
	case q32Q4_1:
		q4_1x1x1AVX512(w, 0, a, 0, nb, acc)
	case q32Q5_0:
		q5_0x1x1AVX512(w, 0, a, 0, nb, acc)
	case q32Q5_1:
		q5_1x1x1AVX512(w, 0, a, 0, nb, acc)
	case q32IQ4_NL:
		iq4_nlx1x1AVX512(w, 0, a, 0, nb, acc)
	}
}

// rows sets out[r] to f.dot of row r (ldw bytes apart) and a.
func (f q32) rows(w []byte, ldw int, a []byte, nb int, out []float32) {
	avx2 := eightBitQ32
	if (!vnniKernels && !avx2) || len(out) == 0 {
		rowsGo(f.dot, w, ldw, a, nb, out)
		return
	}
	_ = w[(len(out)-1)*ldw+nb*f.blockBytes()-1]
	_ = a[q8Pairs(nb)*q8ActPairBytes-1]
	if avx2 {
		q32AVX2[f].rows(w, ldw, a, nb, len(out), out)
		return
	}
	switch f {
	case q32Q8_0:
		q8_0RowsAVX512(w, ldw, a, nb, len(out), out)
	case q32Q4_0:
		q4_0RowsAVX512(w, ldw, a, nb, len(out), out)
	case q32Q4_1:
		q4_1RowsAVX512(w, ldw, a, nb, len(out), out)
	case q32Q5_0:
		q5_0RowsAVX512(w, ldw, a, nb, len(out), out)
	case q32Q5_1:
		q5_1RowsAVX512(w, ldw, a, nb, len(out), out)
	case q32IQ4_NL:
		iq4_nlRowsAVX512(w, ldw, a, nb, len(out), out)
	}
}
