package blocks

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGemmTileMatchesDot requires every value of gemmTile to equal dotF32
// (float32 rows) or dotF16 (binary16 rows) of its row and input bit for bit, for tiles with leftover rows and inputs:
// the batched path must not change a row's result.
func TestGemmTileMatchesDot(t *testing.T) {
	if gemmF32x3x4 == nil {
		t.Skip("no GEMM kernel in this build (portable kernels): mulRows uses dotF32x2")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, cols := range []int{32, 96, 4096} {
		for _, nr := range []int{1, 3, 5, 12} {
			for _, n := range []int{1, 2, 4, 7, 9} {
				rows := make([]float32, nr*cols)
				x := make([]float32, n*cols)
				for i := range rows {
					rows[i] = float32(rng.NormFloat64())
				}
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				const outRows, r0 = 20, 2
				out := make([]float32, n*outRows)
				gemmTile(out, outRows, r0, f32Tile(rows, nr, cols), x, n)
				for tt := range n {
					for r := range nr {
						want := dotF32(rows[r*cols:(r+1)*cols], x[tt*cols:(tt+1)*cols])
						require.Equal(t, math.Float32bits(want), math.Float32bits(out[tt*outRows+r0+r]),
							"cols %d rows %d inputs %d: row %d input %d", cols, nr, n, r, tt)
					}
				}
				// The same values as binary16, widened in the kernel, against dotF16.
				w := make([]uint16, len(rows))
				for i, v := range rows {
					w[i] = f32ToF16(v)
				}
				clear(out)
				gemmTile(out, outRows, r0, f16Tile(w, nr, cols), x, n)
				for tt := range n {
					for r := range nr {
						want := dotF16(w[r*cols:(r+1)*cols], x[tt*cols:(tt+1)*cols])
						require.Equal(t, math.Float32bits(want), math.Float32bits(out[tt*outRows+r0+r]),
							"f16: cols %d rows %d inputs %d: row %d input %d", cols, nr, n, r, tt)
					}
				}
			}
		}
	}
}
