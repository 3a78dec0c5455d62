//go:build amd64 && !purego

package blocks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestMulRowsQ8x8MatchesDot runs Q8_0 rows through the 8- and 4-input
// tiles for row ranges off the tiles' 16 rows, inputs past a multiple of 8
// and of 4, and
// widths with a short last chunk of blocks, and requires every output to
// be dotQ8_0 of its row and input (dotQ8_0AVX2, decode's product) bit for
// bit; where the VNNI tiles are off, mulRows takes this path for 4 inputs
// or more.
func TestMulRowsQ8x8MatchesDot(t *testing.T) {
	if q8x8Tile == nil {
		t.Skip("no AVX2/FMA/F16C: the portable kernels are the ones in use")
	}
	rng := rand.New(rand.NewPCG(89, 90))
	for _, c := range []struct{ rows, cols, r0, r1, n int }{
		{40, 512, 0, 40, 8}, {37, 32 * 21, 3, 35, 17}, {16, 32, 0, 16, 16},
		{20, 32 * 40, 1, 20, gemmMaxInputs}, {9, 32 * 17, 0, 9, 11}, {18, 64, 0, 18, 4},
		{17, 32 * 18, 1, 17, 7}, {33, 96, 0, 33, 13},
	} {
		t.Run(fmt.Sprintf("%dx%d/[%d,%d)/n%d", c.rows, c.cols, c.r0, c.r1, c.n), func(t *testing.T) {
			m := randomMatrix(rng, c.rows, c.cols, swarm.DTypeQ8_0)
			x := randF32(rng, c.n*c.cols)
			for i := range c.cols / 4 { // some blocks of -0 products
				x[i] = float32(math.Copysign(0, -1))
			}
			check := func(out []float32, what string) {
				for tt := range c.n {
					for r := c.r0; r < c.r1; r++ {
						want := m.dotRow(r, x[tt*c.cols:(tt+1)*c.cols])
						require.Equal(t, math.Float32bits(want), math.Float32bits(out[tt*c.rows+r]), "%s: input %d row %d", what, tt, r)
					}
				}
			}
			out := make([]float32, c.n*c.rows)
			m.mulRowsQ8x8(out, x, c.cols, c.n, c.r0, c.r1)
			check(out, "mulRowsQ8x8")
			if !q8Tiles {
				clear(out)
				in := prepareInputs([]*matrix{m}, x, c.n, c.cols)
				m.mulRows(out, in, c.n, c.r0, c.r1)
				in.release()
				check(out, "mulRows")
			}
		})
	}
}
