// Package membw measures how many bytes per second this machine's cores
// can really read from memory: the bound that `swarm bench memory` prints
// and that `swarm bench local` divides decode throughput by (issue 12,
// item 4). It reads a buffer much larger than the last-level cache with
// 1..N goroutines through the widest read loop the CPU offers, chosen at
// run time: AVX-512 (64-byte VMOVDQU64 loads), AVX2 (32-byte VMOVDQU
// loads), or a portable Go loop (non-amd64 builds and -tags purego). Every
// kernel adds the bytes up as little-endian uint64 words, so the loads
// cannot be elided and each kernel's checksum can be checked against a
// plain Go loop.
//
// It is a leaf: this package must never import another package of this
// repository.
package membw
