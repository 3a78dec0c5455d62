//go:build amd64 && !purego

package membw

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// sumAVX512 sums the uint64 words of n bytes at p (n a multiple of 64)
// with 64-byte loads; kernel_amd64.s.
//
//go:noescape
func sumAVX512(p unsafe.Pointer, n int) uint64

// sumAVX2 sums the uint64 words of n bytes at p (n a multiple of 32) with
// 32-byte loads; kernel_amd64.s.
//
//go:noescape
func sumAVX2(p unsafe.Pointer, n int) uint64

// init registers the assembly loops the CPU and OS support
// (golang.org/x/sys/cpu checks that the OS saves the wide registers).
func init() {
	if cpu.X86.HasAVX512F {
		kernels[KernelAVX512] = func(p []byte) (uint64, int) {
			n := len(p) &^ 63
			if n == 0 {
				return 0, 0
			}
			return sumAVX512(unsafe.Pointer(&p[0]), n), n
		}
	}
	if cpu.X86.HasAVX2 {
		kernels[KernelAVX2] = func(p []byte) (uint64, int) {
			n := len(p) &^ 31
			if n == 0 {
				return 0, 0
			}
			return sumAVX2(unsafe.Pointer(&p[0]), n), n
		}
	}
}
