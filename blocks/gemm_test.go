package blocks

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestGemmTileMatchesDot requires every value of gemmTile to equal dotF32
// (float32 rows) or dotF16 (binary16 rows) of its row and input bit for bit, for tiles with leftover rows and inputs:
// the batched path must not change a row's result. Where the CPU has
// AVX-512, the binary16 tiles run the 6-row kernel too. The binary16 tiles
// are the four-accumulator products, so f16x8 (which sums binary16 rows
// otherwise, TestMulRowsF16x8MatchesDot) is off for the test.
func TestGemmTileMatchesDot(t *testing.T) {
	if gemmF32x3x4 == nil {
		t.Skip("no GEMM kernel in this build (portable kernels): mulRows uses dotF32x2")
	}
	was := f16x8
	useF16x8(false)
	defer useF16x8(was)
	rng := rand.New(rand.NewPCG(3, 4))
	// 4192 columns: a wide chunk (gemmWideChunkBlocks) and 3 blocks more;
	// 6, 9 and 12 rows: one or two pairs of groups for the 6-row kernel,
	// with and without a group left over.
	for _, cols := range []int{32, 96, 4096, 4192} {
		for _, nr := range []int{1, 3, 5, 6, 9, 12} {
			for _, n := range []int{1, 2, 4, 7, 9, 16} {
				rows := make([]float32, nr*cols)
				x := make([]float32, n*cols)
				for i := range rows {
					rows[i] = float32(rng.NormFloat64())
				}
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				// The same values as binary16, widened in the kernel, against dotF16.
				w := make([]uint16, len(rows))
				for i, v := range rows {
					w[i] = f32ToF16(v)
				}
				for name, tc := range map[string]struct {
					tile tileRows
					dot  func(r int, x []float32) float32
				}{
					"f32": {f32Tile(rows, nr, cols, cols), func(r int, x []float32) float32 { return dotF32(rows[r*cols:(r+1)*cols], x) }},
					"f16": {f16Tile(w, nr, cols, cols), func(r int, x []float32) float32 { return dotF16(w[r*cols:(r+1)*cols], x) }},
				} {
					const outRows, r0 = 20, 2
					out := make([]float32, n*outRows)
					gemmTile(out, outRows, r0, tc.tile, x, n)
					for tt := range n {
						for r := range nr {
							want := tc.dot(r, x[tt*cols:(tt+1)*cols])
							require.Equal(t, math.Float32bits(want), math.Float32bits(out[tt*outRows+r0+r]),
								"%s: cols %d rows %d inputs %d: row %d input %d", name, cols, nr, n, r, tt)
						}
					}
				}
			}
		}
	}
}

// TestDotF16RowsMatchesDot requires dotF16Rows (decode's path for a tile of
// f16 rows) to give every row's dotF16 bit for bit, for row lengths with
// 8- and 1-element tails.
func TestDotF16RowsMatchesDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, cols := range []int{1, 7, 8, 33, 96, 2048, 2051} {
		for _, rows := range []int{1, 2, 5, 6} {
			dotF16RowsCase(t, rng, rows, cols)
		}
	}
}

// dotF16RowsCase checks dotF16Rows on rows x cols random values.
func dotF16RowsCase(t *testing.T, rng *rand.Rand, rows, cols int) {
	{
		w := make([]uint16, rows*cols)
		x := make([]float32, cols)
		for i := range w {
			w[i] = f32ToF16(float32(rng.NormFloat64()))
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, rows)
		dotF16Rows(w, cols, x, out)
		for r := range rows {
			require.Equal(t, math.Float32bits(dotF16(w[r*cols:(r+1)*cols], x)), math.Float32bits(out[r]), "cols %d row %d of %d", cols, r, rows)
		}
	}
}

// TestMulRowsInputBlocksMatchSingle runs more inputs than one block
// (gemmMaxInputs) through mulRows, for every kernel family, and requires
// each output to be the bits the same input gives alone (n = 1: decode).
func TestMulRowsInputBlocksMatchSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n, rows, cols = 2*gemmMaxInputs + 22, 13, 512
	for _, dt := range []swarm.DType{swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16, swarm.DTypeQ8_0,
		swarm.DTypeQ4_K, swarm.DTypeQ6_K, swarm.DTypeQ5_0} {
		t.Run(dt.String(), func(t *testing.T) {
			m := randomMatrix(rng, rows, cols, dt)
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			out := make([]float32, n*rows)
			in := prepareInputs([]*matrix{m}, x, n, cols)
			m.mulRows(out, in, n, 0, rows)
			in.release()
			one := make([]float32, rows)
			for tt := range n {
				in1 := prepareInputs([]*matrix{m}, x[tt*cols:(tt+1)*cols], 1, cols)
				m.mulRows(one, in1, 1, 0, rows)
				in1.release()
				for r := range rows {
					require.Equal(t, math.Float32bits(one[r]), math.Float32bits(out[tt*rows+r]), "input %d row %d", tt, r)
				}
			}
		})
	}
}
