//go:build !amd64 || purego

package blocks

// gemmF16x6x4 is never called without the assembly kernels (gemm6x4 is
// false).
func gemmF16x6x4(w []uint16, ldw int, x []float32, ldx int, blocks int, acc *[2 * gemmAcc]float32) {
	panic("blocks: gemmF16x6x4 without the AVX-512 kernels")
}

// useF16x8 has nothing to switch without the assembly kernels: f16x8 stays
// false.
func useF16x8(on bool) {}
