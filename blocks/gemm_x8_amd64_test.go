//go:build amd64 && !purego

package blocks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// withF16x8 runs f with the f16x8 products installed (on any AVX2 CPU),
// then restores the kernels init chose.
func withF16x8(t *testing.T, f func()) {
	t.Helper()
	if !simdKernels {
		t.Skip("no AVX2/FMA/F16C: the portable kernels are the ones in use")
	}
	was := f16x8
	useF16x8(true)
	defer useF16x8(was)
	f()
}

func randF16(rng *rand.Rand, n int) []uint16 {
	w := make([]uint16, n)
	for i := range w {
		w[i] = f32ToF16(float32(rng.NormFloat64()))
	}
	return w
}

func randF32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// TestDotF16x8MatchesGo requires the assembly f16x8 dot products (one row,
// and four rows at a time) to equal dotF16x8Go, the definition, bit for
// bit, for lengths with and without 32-, 8- and 1-element tails.
func TestDotF16x8MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, cols := range []int{1, 7, 8, 16, 33, 96, 256, 1000, 4096, 4104} {
		w := randF16(rng, 9*cols)
		x := randF32(rng, cols)
		for r := range 9 {
			row := w[r*cols : (r+1)*cols]
			require.Equal(t, math.Float32bits(dotF16x8Go(row, x)), math.Float32bits(dotF16x8AVX2(row, x)), "cols %d row %d", cols, r)
		}
		if cols%8 == 0 {
			out := make([]float32, 8)
			dotF16x8Rows4AVX2(w, cols, x, out)
			for r := range out {
				require.Equal(t, math.Float32bits(dotF16x8Go(w[r*cols:(r+1)*cols], x)), math.Float32bits(out[r]), "rows kernel, cols %d row %d", cols, r)
			}
		}
	}
}

// TestGemmF16x8MatchesGo requires the tile kernel's lanes, for one and two
// groups of 3 rows (and one row repeated, ldw 0), continued over two calls
// from non-zero accumulators, to be the lanes of dotF16x8Go's chains bit
// for bit, with strides that are not the row length, and the prefetches to
// change nothing.
func TestGemmF16x8MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	tab := f16Table()
	const ldx = 40*32 + 16
	for _, c := range []struct{ groups, ldw int }{{1, 40*32 + 48}, {2, 40*32 + 48}, {1, 0}} {
		for _, blocks := range []int{1, 5, 8, 40} {
			w := randF16(rng, 6*(40*32+48))
			x := randF32(rng, 4*ldx)
			acc := make([]float32, c.groups*x8Acc)
			want := make([]float32, len(acc))
			for i := range acc {
				acc[i] = float32(i%5) / 8
				want[i] = acc[i]
			}
			half := blocks / 2
			gemmF16x8TileAVX2(w, c.ldw, c.groups, x, ldx, half, (*[x8Acc]float32)(acc), unsafe.Pointer(&w[0]), 64, 1, half)
			gemmF16x8TileAVX2(w[32*half:], c.ldw, c.groups, x[32*half:], ldx, blocks-half, (*[x8Acc]float32)(acc), nil, 0, 0, 0)
			for g := range c.groups {
				for r := range 3 {
					row := w[(3*g+r)*c.ldw:]
					for tt := range 4 {
						for j := range 8 {
							s := &want[g*x8Acc+(r*4+tt)*8+j]
							for i := j; i < 32*blocks; i += 8 {
								*s = fma32(tab[row[i]], x[tt*ldx+i], *s)
							}
						}
					}
				}
			}
			for i := range acc {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(acc[i]), "%d groups, ldw %d, %d blocks, lane %d", c.groups, c.ldw, blocks, i)
			}
		}
	}
}

// TestX8ReduceMatchesGo requires x8Reduce's sums of full tiles (the lanes
// of magnitudes 2^-20..2^20, so that the order of the additions shows in
// the rounding) to equal x8ReduceGo's bit for bit, leaving every other
// output alone.
func TestX8ReduceMatchesGo(t *testing.T) {
	withF16x8(t, func() {
		rng := rand.New(rand.NewPCG(85, 86))
		for _, groups := range []int{1, 2, 8} {
			acc := make([]float32, groups*x8Acc)
			for i := range acc {
				acc[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(41)-20))
			}
			const ldo = 3*8 + 5
			got, want := make([]float32, 4*ldo), make([]float32, 4*ldo)
			for i := range got {
				got[i], want[i] = -1, -1
			}
			x8Reduce(acc, groups, got, ldo)
			x8ReduceGo(acc, groups, want, ldo)
			for i := range got {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%d groups, output %d", groups, i)
			}
		}
	})
}

// TestMulRowsF16x8MatchesDot runs binary16 products under f16x8 through
// mulRows for row ranges that start and end off the tiles and groups of 3,
// inputs that are not a multiple of 4 (and more than one block of
// gemmMaxInputs), and widths with a short last chunk or not a multiple of
// 32, and requires every output to be dotF16 of its row and input bit for
// bit (the f16x8 sums, as decode's dotF16Rows gives them alone), and
// decode's dotF16Rows to be dotF16 too.
func TestMulRowsF16x8MatchesDot(t *testing.T) {
	withF16x8(t, func() {
		require.Contains(t, Kernels(), "+f16x8")
		rng := rand.New(rand.NewPCG(85, 86))
		for _, c := range []struct{ rows, cols, r0, r1, n int }{
			{50, 256, 0, 50, 16}, {50, 512 + 96, 1, 49, 7}, {31, 64, 2, 29, 2},
			{8, 4096, 0, 8, 5}, {26, 288, 0, 26, gemmMaxInputs + 9}, {10, 100, 0, 10, 6},
			{52, 256, 3, 52, 3}, {23, 256, 0, 23, gemmMaxInputs}, {47, 96, 0, 47, 2*gemmMaxInputs + 3},
		} {
			t.Run(fmt.Sprintf("%dx%d/[%d,%d)/n%d", c.rows, c.cols, c.r0, c.r1, c.n), func(t *testing.T) {
				m := randomMatrix(rng, c.rows, c.cols, swarm.DTypeF16)
				x := randF32(rng, c.n*c.cols)
				out := make([]float32, c.n*c.rows)
				in := prepareInputs([]*matrix{m}, x, c.n, c.cols)
				require.Equal(t, c.cols%32 == 0, in.x8.buf != nil, "the chunk-major inputs exactly where cols is a multiple of 32")
				m.mulRows(out, in, c.n, c.r0, c.r1)
				in.release()
				for tt := range c.n {
					xt := x[tt*c.cols : (tt+1)*c.cols]
					for r := c.r0; r < c.r1; r++ {
						want := dotF16(m.u16[r*c.cols:(r+1)*c.cols], xt)
						require.Equal(t, math.Float32bits(dotF16x8Go(m.u16[r*c.cols:(r+1)*c.cols], xt)), math.Float32bits(want), "dotF16 is the f16x8 sum")
						require.Equal(t, math.Float32bits(want), math.Float32bits(out[tt*c.rows+r]), "input %d row %d", tt, r)
					}
				}
				one := make([]float32, c.rows)
				dotF16Rows(m.u16, c.cols, x[:c.cols], one)
				for r := c.r0; r < c.r1; r++ {
					require.Equal(t, math.Float32bits(out[r]), math.Float32bits(one[r]), "decode row %d", r)
				}
			})
		}
	})
}

// TestF16x8KernelSet requires useF16x8 to name the kernels and switch
// dotF16 between the two sums (which differ for random rows).
func TestF16x8KernelSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(87, 88))
	w, x := randF16(rng, 4096), randF32(rng, 4096)
	var on, off float32
	withF16x8(t, func() {
		require.Contains(t, Kernels(), "+f16x8")
		on = dotF16(w, x)
	})
	was := f16x8
	useF16x8(false)
	require.NotContains(t, Kernels(), "+f16x8")
	off = dotF16(w, x)
	useF16x8(was)
	require.Equal(t, math.Float32bits(dotF16x8Go(w, x)), math.Float32bits(on))
	require.NotEqual(t, math.Float32bits(on), math.Float32bits(off), "four accumulators and one sum these 4096 products differently")
	require.Equal(t, !avx512Kernels, f16x8, "init uses f16x8 exactly where there is no AVX-512")
}
