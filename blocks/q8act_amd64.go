//go:build amd64 && !purego

package blocks

import "golang.org/x/sys/cpu"

// The Q8_0 x Q8 kernels of q8gemm_amd64.s.

//go:noescape
func q8_0x3x4AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32)

//go:noescape
func q8_0x1x1AVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)

// vnniKernels reports whether the VNNI kernels are in use: AVX-512 F, VL,
// BW and VNNI (VPDPBUSD on 256-bit registers, Y16-Y31).
var vnniKernels = avx512Kernels && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

func init() {
	if !vnniKernels {
		return
	}
	kernelSet = "avx2+avx512+vnni"
	q8_0Tile3x4 = func(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32) {
		// Bound the reads: rows 0..2 and inputs 0..3 of nb blocks.
		_ = w[2*ldw+nb*q8BlockBytes-1]
		_ = a[3*lda+nb*q8ActBlockBytes-1]
		q8_0x3x4AVX512(w, ldw, a, lda, nb, acc)
	}
	dotQ8_0Q8 = func(w, a []byte, nb int) float32 {
		_ = w[nb*q8BlockBytes-1]
		_ = a[nb*q8ActBlockBytes-1]
		var acc [q8Lanes]float32
		q8_0x1x1AVX512(w, 0, a, 0, nb, &acc)
		return reduceLanes(&acc)
	}
}
