//go:build !purego

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// halves returns n random binary16 values of unit scale.
func halves(rng *rand.Rand, n int) []uint16 {
	h := make([]uint16, n)
	for i := range h {
		h[i] = f2h(float32(rng.NormFloat64()))
	}
	return h
}

// refMatvec is W·x in float64 from the binary16 inputs: [n, rows].
func refMatvec(w, x []uint16, rows, cols, n int) []float64 {
	out := make([]float64, n*rows)
	for c := range n {
		for r := range rows {
			var s float64
			for k := range cols {
				s += float64(h2f(w[r*cols+k])) * float64(h2f(x[c*cols+k]))
			}
			out[c*rows+r] = s
		}
	}
	return out
}

// mvKernel is one launch of a matrix-product kernel: its name, warps a
// block (matvec) and the most tokens it takes (mma; 0: any).
type mvKernel struct {
	name  string
	warps int
	maxN  int
}

// mvFamilies are the matrix-product kernels by family: within one, every
// kernel gives a token the same bits. matvec: the tile widths, matvec_16
// with the engine's 8 warps a block and with 4. mma: the tensor-core
// kernels (cols % 8 == 0 only), the widest first.
var mvFamilies = map[string][]mvKernel{
	"matvec": {{"matvec_1", 4, 0}, {"matvec_4", 4, 0}, {"matvec_16", 8, 0}, {"matvec_16", 4, 0}},
	"mma":    {{"mma_64", 0, 64}, {"mma_8", 0, 8}, {"mma_16", 0, 16}},
}

// grid is the launch grid over rows (the stacked rows in modes 0 and 1, the
// gate's in mode 2) and the block size, as mvLaunch and mmaLaunch compute
// them.
func (k mvKernel) grid(mode, rows int) (grid, block int) {
	if k.maxN > 0 {
		_, g, b := mmaLaunch(k.maxN, mode, rows)
		return int(g), int(b)
	}
	units := (rows + 1) / 2
	if mode == mvGLU {
		units = rows
	}
	return (units + k.warps - 1) / k.warps, 32 * k.warps
}

// takes reports whether k runs n tokens of rows cols wide.
func (k mvKernel) takes(n, cols int) bool {
	return k.maxN == 0 || (n <= k.maxN && cols%8 == 0)
}

// The matrix-product kernels against float64 sums, in each mode, for row
// widths with and without 16-byte loads, token counts across tiles, and
// stacked matrices whose rows do not pair up or fill a 16-row unit; every
// kernel of a family and every n must give each token bit for bit the
// same values (the engine's batch and replay exactness rest on it).
func TestHostMatvec(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, cols := range []int{264, 20} {
		rows := [3]int{19, 5, 2}
		const nMax = 17
		x := halves(rng, nMax*cols)
		var w [3][]uint16
		for i := range w {
			w[i] = halves(rng, rows[i]*cols)
		}
		for _, fam := range []string{"matvec", "mma"} {
			if fam == "mma" && cols%8 != 0 {
				continue
			}
			kernels := mvFamilies[fam]
			t.Run(fmt.Sprintf("%s/store/cols%d", fam, cols), func(t *testing.T) {
				var first [3][]float32 // every token's rows from the family's first run (n = nMax)
				for _, k := range kernels {
					for _, n := range []int{nMax, 1, 3, 6, 11} {
						if !k.takes(n, cols) {
							continue
						}
						var o [3][]float32
						for i := range o {
							o[i] = make([]float32, n*rows[i])
						}
						xs := x[:n*cols]
						grid, block := k.grid(mvStore, rows[0]+rows[1]+rows[2])
						launchHost(t, k.name, grid, block, &xs, cols, n, &w[0], &o[0], rows[0], &w[1], &o[1], rows[1],
							&w[2], &o[2], rows[2], mvStore, nil, 0)
						for i := range o {
							want := refMatvec(w[i], xs, rows[i], cols, n)
							for j := range want {
								require.InDelta(t, want[j], float64(o[i][j]), 1e-5*math.Max(1, math.Abs(want[j])), "%v n=%d matrix %d element %d", k, n, i, j)
							}
							if first[i] == nil {
								first[i] = o[i]
							}
							require.Equal(t, first[i][:n*rows[i]], o[i], "%v n=%d matrix %d: a token's sums differ from the family's first run", k, n, i)
						}
					}
				}
			})
			t.Run(fmt.Sprintf("%s/add/cols%d", fam, cols), func(t *testing.T) {
				const n = 6
				init := randn(rng, n*rows[0])
				want := refMatvec(w[0], x[:n*cols], rows[0], cols, n)
				for _, k := range kernels {
					o := append([]float32(nil), init...)
					xs := x[:n*cols]
					grid, block := k.grid(mvAdd, rows[0])
					launchHost(t, k.name, grid, block, &xs, cols, n, &w[0], &o, rows[0], nil, nil, 0, nil, nil, 0, mvAdd, nil, 0)
					for j := range o {
						require.InDelta(t, float64(init[j])+want[j], float64(o[j]), 1e-5*math.Max(1, math.Abs(want[j])), "%v element %d", k, j)
					}
				}
			})
			t.Run(fmt.Sprintf("%s/glu/cols%d", fam, cols), func(t *testing.T) {
				const n = 5
				gate, up := w[0], halves(rng, rows[0]*cols)
				g, u := refMatvec(gate, x[:n*cols], rows[0], cols, n), refMatvec(up, x[:n*cols], rows[0], cols, n)
				for act, f := range []func(x float64) float64{
					func(x float64) float64 { return x / (1 + math.Exp(-x)) },
					func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) },
				} {
					for _, k := range kernels {
						outh := make([]uint16, n*rows[0])
						xs := x[:n*cols]
						grid, block := k.grid(mvGLU, rows[0])
						launchHost(t, k.name, grid, block, &xs, cols, n, &gate, nil, rows[0], &up, nil, rows[0], nil, nil, 0, mvGLU, &outh, act)
						for j := range outh {
							want := f(g[j]) * u[j]
							require.InDelta(t, want, float64(h2f(outh[j])), 2e-3*math.Max(1, math.Abs(want)), "%v act %d element %d", k, act, j)
						}
					}
				}
			})
		}
	}
}
