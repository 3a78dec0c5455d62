//go:build amd64 && !purego

package flops

import "golang.org/x/sys/cpu"

// fmaAVX512 runs iters iterations of 2 x 12 independent 16-lane VFMADD213PS
// and returns lane 0 of their sum; kernel_amd64.s.
//
//go:noescape
func fmaAVX512(iters int) float32

// fmaAVX2 is fmaAVX512 with 8-lane registers.
//
//go:noescape
func fmaAVX2(iters int) float32

// init registers the loops the CPU and OS support (golang.org/x/sys/cpu
// checks that the OS saves the wide registers).
func init() {
	if cpu.X86.HasAVX512F {
		kernels[KernelAVX512] = loop{run: fmaAVX512, flopsPerIter: 2 * 12 * 16 * 2}
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernels[KernelAVX2] = loop{run: fmaAVX2, flopsPerIter: 2 * 12 * 8 * 2}
	}
}
