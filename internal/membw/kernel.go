package membw

import (
	"encoding/binary"
	"fmt"
)

// Kernel names one read loop.
type Kernel string

// The read loops, widest first.
const (
	// KernelAVX512 loads 64 bytes per instruction (VMOVDQU64) into four
	// 512-bit accumulators (VPADDQ).
	KernelAVX512 Kernel = "avx512"
	// KernelAVX2 loads 32 bytes per instruction (VMOVDQU) into four 256-bit
	// accumulators.
	KernelAVX2 Kernel = "avx2"
	// KernelGo is the portable loop: eight uint64 words per iteration into
	// four accumulators.
	KernelGo Kernel = "go"
)

// kernels maps each kernel available on this CPU and build to its bulk
// loop, which sums the little-endian uint64 words of a prefix of p and
// returns how many bytes it consumed (a multiple of 8).
var kernels = map[Kernel]func(p []byte) (sum uint64, n int){KernelGo: sumGo}

// Available lists the kernels this CPU and build can run, widest first;
// KernelGo is always last.
func Available() []Kernel {
	var out []Kernel
	for _, k := range []Kernel{KernelAVX512, KernelAVX2, KernelGo} {
		if kernels[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// Best returns the widest kernel available, the one Measure uses by
// default.
func Best() Kernel { return Available()[0] }

// Checksum returns the sum modulo 2^64 of buf read as little-endian uint64
// words, the last partial word padded with zero bytes, computed by kernel
// k. It is the same number for every kernel (the tests check it against a
// plain loop). Errors: k not available on this CPU or build.
func Checksum(k Kernel, buf []byte) (uint64, error) {
	f := kernels[k]
	if f == nil {
		return 0, fmt.Errorf("membw: kernel %q is not available here, want one of %v", k, Available())
	}
	return checksum(f, buf), nil
}

// checksum runs f over the bulk of buf and finishes the tail in Go.
func checksum(f func([]byte) (uint64, int), buf []byte) uint64 {
	s, n := f(buf)
	rest := buf[n:]
	for len(rest) >= 8 {
		s += binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
	}
	if len(rest) > 0 {
		var w [8]byte
		copy(w[:], rest)
		s += binary.LittleEndian.Uint64(w[:])
	}
	return s
}

// sumGo is the portable bulk loop: 64 bytes per iteration, four
// accumulators.
func sumGo(p []byte) (uint64, int) {
	var a0, a1, a2, a3 uint64
	n := len(p) &^ 63
	for i := 0; i < n; i += 64 {
		q := p[i : i+64 : i+64]
		a0 += binary.LittleEndian.Uint64(q[0:]) + binary.LittleEndian.Uint64(q[32:])
		a1 += binary.LittleEndian.Uint64(q[8:]) + binary.LittleEndian.Uint64(q[40:])
		a2 += binary.LittleEndian.Uint64(q[16:]) + binary.LittleEndian.Uint64(q[48:])
		a3 += binary.LittleEndian.Uint64(q[24:]) + binary.LittleEndian.Uint64(q[56:])
	}
	return a0 + a1 + a2 + a3, n
}
