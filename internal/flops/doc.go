// Package flops measures the peak float32 multiply-add rate of this
// machine's cores: the bound that `swarm bench flops` prints and that
// `swarm bench server` divides the GFLOP/s it reaches by (issue 13). Each
// goroutine runs a loop of independent fused multiply-adds on registers
// only (no memory traffic), through the widest vector unit the CPU offers
// at run time: AVX-512 (16 lanes), AVX2/FMA (8 lanes), or a portable Go
// loop (non-amd64 builds and -tags purego, which measures what Go's scalar
// code reaches, not the hardware). One multiply-add counts as 2 flops.
//
// It is a leaf: this package must never import another package of this
// repository.
package flops
