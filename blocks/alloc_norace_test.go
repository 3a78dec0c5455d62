//go:build !race

package blocks

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// This file is left out of -race builds: under the race detector sync.Pool
// drops a random share of what is put back, so the allocations it saves
// are not deterministic there. make test runs it without -race.

// TestMulRowsDoesNotAllocate keeps the per-call heap allocations out of
// the products every step runs: the f16 GEMM tiles (batches, prefill) and
// the portable quantized dot products reuse pooled scratch.
func TestMulRowsDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		dt swarm.DType
		n  int
	}{
		{swarm.DTypeF16, 16},
		{swarm.DTypeF16, 1},
		{swarm.DTypeQ5_0, 1},
		{swarm.DTypeQ3_K, 4},
		{swarm.DTypeQ8_0, 16},
		{swarm.DTypeQ4_K, 16},
		{swarm.DTypeQ6_K, 1},
		{swarm.DTypeBF16, 16},
		{swarm.DTypeF16, 70},
		{swarm.DTypeQ8_0, 70},
		{swarm.DTypeQ4_K, 70},
	} {
		t.Run(fmt.Sprintf("%v/n=%d", tc.dt, tc.n), func(t *testing.T) {
			m := benchMatrix(rng, 24, 512, tc.dt)
			x := make([]float32, tc.n*m.cols)
			for i := range x {
				x[i] = float32(i%5) / 5
			}
			out := make([]float32, tc.n*m.rows)
			in := prepareInputs([]*matrix{m}, x, tc.n, m.cols)
			defer in.release()
			m.mulRows(out, in, tc.n, 0, m.rows) // fill the pools
			require.Zero(t, testing.AllocsPerRun(20, func() { m.mulRows(out, in, tc.n, 0, m.rows) }))
		})
	}
}
