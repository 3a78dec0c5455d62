package placement_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
)

// benchFleet is a BLOOM-176B-shaped fleet of 60 servers (12 A100-like, 48
// MIG-like capped at 4 blocks) over 70 blocks with 3 clients and R = 20.
func benchFleet(seed uint64) placement.Input {
	rng := rand.New(rand.NewPCG(seed, 60))
	in := placement.Input{
		Model:    placement.Model{Blocks: 70, BlockBytes: 1_333_200_000, CacheBytes: 8_486_912},
		Clients:  []string{"c0", "c1", "c2"},
		Sessions: 20,
		Petals:   placement.PetalsParams{CacheBytesPerBlock: 234_881_024, ReservedBytes: 2 << 30},
	}
	for j := range 60 {
		s := placement.Server{Name: fmt.Sprintf("s%d", j), MemoryBytes: 9_100_000_000, Tau: 0.0162488, MaxBlocks: 4}
		if j%5 == 0 {
			s = placement.Server{Name: fmt.Sprintf("s%d", j), MemoryBytes: 86_130_000_000, Tau: 0.0032197}
		}
		for range in.Clients {
			s.RTT = append(s.RTT, 0.005+0.1*rng.Float64())
		}
		in.Servers = append(in.Servers, s)
	}
	return in
}

// BenchmarkCGBP times one CG-BP placement of 60 servers over 70 blocks.
func BenchmarkCGBP(b *testing.B) {
	in := benchFleet(1)
	_, err := placement.CGBP(in)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = placement.CGBP(in)
	}
}

// BenchmarkPetals times the PETALS placement baseline on the same fleet.
func BenchmarkPetals(b *testing.B) {
	in := benchFleet(1)
	_, err := placement.Petals(in)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = placement.Petals(in)
	}
}
