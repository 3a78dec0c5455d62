//go:build amd64 && !purego

package blocks

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// AVX2/FMA/F16C assembly versions of the dot-product kernels
// (kernels_amd64.s). They replace the portable ones at init when the CPU
// and OS support them; build with -tags purego to use the portable ones
// everywhere. Results differ from the portable kernels only by float32
// rounding (fused multiply-adds, 32 partial sums instead of 4).

//go:noescape
func dotF32AVX2(a, x []float32) float32

//go:noescape
func axpyAVX2(a float32, x, y []float32)

//go:noescape
func dotF32RowsAVX2(w []float32, stride int, x []float32, out []float32)

//go:noescape
func dotF16AVX2(w []uint16, x []float32) float32

//go:noescape
func dotF16RowsAVX2(w []uint16, cols int, x []float32, out []float32)

//go:noescape
func dotBF16AVX2(w []uint16, x []float32) float32

//go:noescape
func dotQ8_0AVX2(w []byte, x []float32, blocks int) float32

//go:noescape
func dotF32x2AVX2(a, x0, x1 []float32) (float32, float32)

//go:noescape
func cvtF16AVX2(dst []float32, src []uint16)

//go:noescape
func cvtBF16AVX2(dst []float32, src []uint16)

//go:noescape
func gemmF32x3x4AVX2(a []float32, lda int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32)

//go:noescape
func gemmF16x3x4AVX2(a []uint16, lda int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32)

//go:noescape
func gemmF32x3x4AVX512(a []float32, lda int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32)

//go:noescape
func gemmF16x3x4AVX512(a []uint16, lda int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32)

//go:noescape
func gemmF16x6x4AVX512(a []uint16, lda int, x []float32, ldx int, blocks int, acc *[2 * gemmAcc]float32)

//go:noescape
func reduce3x4AVX2(acc *[gemmAcc]float32, out *[gemmRows * gemmInputs]float32)

//go:noescape
func dotF16x8AVX2(w []uint16, x []float32) float32

//go:noescape
func dotF16x8Rows4AVX2(w []uint16, cols int, x []float32, out []float32)

//go:noescape
func gemmF16x8TileAVX2(w []uint16, ldw int, groups int, x []float32, ldx int, blocks int, acc *[x8Acc]float32, pf unsafe.Pointer, pfstride int, pfrows int, npf int)

//go:noescape
func x8ReduceAVX2(acc *float32, groups int, out *float32, ldo int)

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// hasF16C reports the F16C extension (CPUID leaf 1, ECX bit 29), which
// golang.org/x/sys/cpu does not expose.
func hasF16C() bool {
	_, _, ecx, _ := cpuid(1, 0)
	return ecx&(1<<29) != 0
}

// simdKernels reports whether the assembly kernels are in use.
var simdKernels = cpu.X86.HasAVX2 && cpu.X86.HasFMA && hasF16C()

// avx512Kernels reports whether the AVX-512 GEMM kernels (gemm512_amd64.s)
// replace the AVX2 ones: they need AVX-512 F, DQ (VINSERTF32X8) and VL
// (the upper 16 registers at 256 bits), and the OS saving the ZMM state,
// which golang.org/x/sys/cpu checks before it reports AVX-512.
var avx512Kernels = simdKernels && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL

func init() {
	if !simdKernels {
		return
	}
	// The wrappers bound x to the row's length, so the assembly never reads
	// past either slice.
	dotF32 = func(a, x []float32) float32 { return dotF32AVX2(a, x[:len(a)]) }
	axpy = func(a float32, x, y []float32) { axpyAVX2(a, x[:len(y)], y) }
	dotF32Rows = func(w []float32, stride int, x []float32, out []float32) {
		if len(out) == 0 {
			return
		}
		// Bound the reads: the last row's len(x) elements.
		_ = w[(len(out)-1)*stride+len(x)-1]
		dotF32RowsAVX2(w, stride, x, out)
	}
	dotBF16 = func(w []uint16, x []float32) float32 { return dotBF16AVX2(w, x[:len(w)]) }
	dotF32x2 = func(a, x0, x1 []float32) (float32, float32) {
		return dotF32x2AVX2(a, x0[:len(a)], x1[:len(a)])
	}
	cvtF16 = func(dst []float32, src []uint16) { cvtF16AVX2(dst[:len(src)], src) }
	cvtBF16 = func(dst []float32, src []uint16) { cvtBF16AVX2(dst[:len(src)], src) }
	useGemm(avx512Kernels)
	// Without AVX-512 the binary16 products sum as f16x8 (gemm_x8.go).
	useF16x8(!avx512Kernels)
	reduce3x4 = reduce3x4AVX2
	dotQ8_0 = func(w []byte, x []float32) float32 {
		nb := len(w) / q8BlockBytes
		return dotQ8_0AVX2(w, x[:nb*q8BlockSize], nb)
	}
}

// useGemm installs the AVX-512 (avx512) or the AVX2 3x4 GEMM kernels, which
// give the same results bit for bit; init chooses by CPU feature, and the
// benchmarks compare both.
func useGemm(avx512 bool) {
	g32, g16 := gemmF32x3x4AVX2, gemmF16x3x4AVX2
	kernelSet = "avx2"
	if avx512 {
		g32, g16 = gemmF32x3x4AVX512, gemmF16x3x4AVX512
		kernelSet = "avx2+avx512"
	}
	if vnniKernels { // the 8-bit-activation products, which useGemm does not switch
		kernelSet += "+vnni"
	}
	if eightBitQ32 { // the q32 formats x 8-bit activations with AVX2 (q8avx2_amd64.s)
		kernelSet += "+q32i8"
	}
	if f16x8 {
		kernelSet += "+f16x8"
	}
	gemmF32x3x4 = func(a []float32, lda int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32) {
		// Bound the reads: rows 0..2 and inputs 0..3 of 32*blocks elements.
		_ = a[2*lda+32*blocks-1]
		_ = x[3*ldx+32*blocks-1]
		g32(a, lda, x, ldx, blocks, acc)
	}
	gemmF16x3x4 = func(w []uint16, ldw int, x []float32, ldx int, blocks int, acc *[gemmAcc]float32) {
		_ = w[2*ldw+32*blocks-1]
		_ = x[3*ldx+32*blocks-1]
		g16(w, ldw, x, ldx, blocks, acc)
	}
	gemm6x4 = avx512
}

// gemmF16x6x4 is gemmF16x6x4AVX512 with its reads bounded (see gemm6x4).
// A plain function, not a function value like gemmF16x3x4: the assembly
// does not keep its arguments, and a call through a function value would
// make gemmTile's tile escape to the heap.
func gemmF16x6x4(w []uint16, ldw int, x []float32, ldx int, blocks int, acc *[2 * gemmAcc]float32) {
	// Bound the reads: rows 0..5 and inputs 0..3 of 32*blocks elements.
	_ = w[5*ldw+32*blocks-1]
	_ = x[3*ldx+32*blocks-1]
	gemmF16x6x4AVX512(w, ldw, x, ldx, blocks, acc)
}

// useF16x8 installs the f16x8 binary16 products (on) or the four-accumulator
// ones dotF16AVX2 sums (off), and names them in kernelSet; init turns them
// on where the CPU has no AVX-512, and the tests and benchmarks switch
// them on any AVX2 CPU.
func useF16x8(on bool) {
	f16x8 = on
	kernelSet = strings.TrimSuffix(kernelSet, "+f16x8")
	if !on {
		dotF16 = func(w []uint16, x []float32) float32 { return dotF16AVX2(w, x[:len(w)]) }
		dotF16Rows = func(w []uint16, cols int, x []float32, out []float32) {
			// Bound the reads: len(out) rows of cols weights, cols inputs.
			_ = w[len(out)*cols-1]
			_ = x[cols-1]
			dotF16RowsAVX2(w, cols, x, out)
		}
		gemmF16x8Tile, x8Reduce = nil, nil
		return
	}
	kernelSet += "+f16x8"
	dotF16 = func(w []uint16, x []float32) float32 { return dotF16x8AVX2(w, x[:len(w)]) }
	dotF16Rows = func(w []uint16, cols int, x []float32, out []float32) {
		quads := 0
		if cols%8 == 0 {
			quads = len(out) / 4 * 4
		}
		if quads > 0 {
			// Bound the reads: quads rows of cols weights, cols inputs.
			_ = w[quads*cols-1]
			_ = x[cols-1]
			dotF16x8Rows4AVX2(w, cols, x, out[:quads])
		}
		for r := quads; r < len(out); r++ {
			out[r] = dotF16x8AVX2(w[r*cols:(r+1)*cols], x[:cols])
		}
	}
	gemmF16x8Tile = func(w []uint16, ldw, groups int, x []float32, ldx int, blocks int, acc []float32, pf unsafe.Pointer, pfstride, pfrows, npf int) {
		if blocks == 0 || groups == 0 {
			return
		}
		// Bound the reads: the groups' 3*groups rows and inputs 0..3 of
		// 32*blocks elements, and the accumulators written.
		_ = w[(3*groups-1)*ldw+32*blocks-1]
		_ = x[3*ldx+32*blocks-1]
		_ = acc[groups*x8Acc-1]
		gemmF16x8TileAVX2(w, ldw, groups, x, ldx, blocks, (*[x8Acc]float32)(acc), pf, pfstride, max(0, min(pfrows, groups)), min(npf, blocks))
	}
	x8Reduce = func(acc []float32, groups int, out []float32, ldo int) {
		if groups == 0 {
			return
		}
		// Bound the accesses: the groups' accumulators, and the last
		// output of input 3.
		_ = acc[groups*x8Acc-1]
		_ = out[3*ldo+3*groups-1]
		x8ReduceAVX2(&acc[0], groups, &out[0], ldo)
	}
}
