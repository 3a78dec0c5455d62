package blocks

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// randomMatrix fills a [rows, cols] matrix of dtype dt with N(0, 1) values
// (Q8_0: quantized by ggml's reference rule; the other quantized types:
// random blocks, see randomBlocks).
func randomMatrix(rng *rand.Rand, rows, cols int, dt swarm.DType) *matrix {
	m, err := newMatrix(rows, cols, dt)
	if err != nil {
		panic(err)
	}
	for r := range rows {
		row := make([]float32, cols)
		for i := range row {
			row[i] = float32(rng.NormFloat64())
		}
		switch dt {
		case swarm.DTypeF32:
			copy(m.f32[r*cols:], row)
		case swarm.DTypeF16:
			for i, v := range row {
				m.u16[r*cols+i] = f32ToF16(v)
			}
		case swarm.DTypeBF16:
			for i, v := range row {
				m.u16[r*cols+i] = f32ToBF16(v)
			}
		case swarm.DTypeQ8_0:
			rb := m.rowBytes()
			dst := m.q[r*rb : (r+1)*rb]
			for b := range cols / q8BlockSize {
				blk := row[b*q8BlockSize : (b+1)*q8BlockSize]
				var amax float32
				for _, v := range blk {
					amax = max(amax, float32(math.Abs(float64(v))))
				}
				d := amax / 127
				binary.LittleEndian.PutUint16(dst[b*q8BlockBytes:], f32ToF16(d))
				for j, v := range blk {
					dst[b*q8BlockBytes+2+j] = byte(int8(math.Round(float64(v / d))))
				}
			}
		default:
			randomBlocks(rng, m.q, dt)
			return m
		}
	}
	return m
}

// TestDotKernels compares every kernel, including the assembly ones, with a
// float64 dot product of the dequantized row, for lengths around the SIMD
// widths and a 7B-sized row.
func TestDotKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range append([]swarm.DType{swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16, swarm.DTypeQ8_0}, quantTypes...) {
		for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 256, 288, 512, 4096, 11008} {
			if dt.CheckRow(int64(n)) != nil {
				continue
			}
			t.Run(fmt.Sprintf("%v/%d", dt, n), func(t *testing.T) {
				m := randomMatrix(rng, 1, n, dt)
				x := make([]float32, n+5) // longer x: kernels use only the row's length
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				row := make([]float32, n)
				m.rowF32(0, row)
				var want, mag float64
				for i := range n {
					want += float64(row[i]) * float64(x[i])
					mag += math.Abs(float64(row[i]) * float64(x[i]))
				}
				tol := 1e-6 * (mag + 1)
				require.InDelta(t, want, float64(m.dotRow(0, x)), tol)
				switch dt { // the portable versions too, where assembly replaced them
				case swarm.DTypeF32:
					require.InDelta(t, want, float64(dotF32Go(m.f32, x)), tol)
				case swarm.DTypeF16:
					require.InDelta(t, want, float64(dotF16Go(m.u16, x)), tol)
				case swarm.DTypeBF16:
					require.InDelta(t, want, float64(dotBF16Go(m.u16, x)), tol)
				case swarm.DTypeQ8_0:
					require.InDelta(t, want, float64(dotQ8_0Go(m.q, x)), tol)
				default: // the portable path of every other quantized type
					require.InDelta(t, want, float64(dotQuant(m.deq, m.bs, m.bb, m.q, x)), tol)
				}
			})
		}
	}
}

// TestAxpy requires axpy (the assembly version where the CPU has it) to
// give, for lengths around the SIMD widths, exactly the bits of the
// product rounded to float32 and then added, computed here in float64 and
// rounded after each step (exact: a float32 product fits a float64).
func TestAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 128} {
		a := float32(rng.NormFloat64())
		x := make([]float32, n+3) // longer x: only len(y) elements are read
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range y {
			y[i] = float32(rng.NormFloat64())
		}
		want := make([]float32, n)
		for i := range want {
			p := float32(float64(a) * float64(x[i]))
			want[i] = float32(float64(y[i]) + float64(p))
		}
		got, gotGo := slices.Clone(y), slices.Clone(y)
		axpy(a, x, got)
		axpyGo(a, x, gotGo)
		for i := range want {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "n %d element %d (kernels %s)", n, i, kernelSet)
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(gotGo[i]), "n %d element %d (portable)", n, i)
		}
	}
}

// TestDotF32Rows requires dotF32Rows (the assembly version where the CPU
// has it) to give every strided row's dotF32 bit for bit, for row lengths
// with 32-, 8- and 1-element parts.
func TestDotF32Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, cols := range []int{1, 7, 8, 33, 64, 100, 128} {
		const rows, stride = 5, 300
		w := make([]float32, (rows-1)*stride+cols)
		x := make([]float32, cols)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, rows)
		dotF32Rows(w, stride, x, out)
		for r := range rows {
			row := w[r*stride : r*stride+cols]
			require.Equal(t, math.Float32bits(dotF32(x, row)), math.Float32bits(out[r]), "cols %d row %d (kernels %s)", cols, r, kernelSet)
			require.Equal(t, math.Float32bits(dotF32Go(x, row)), math.Float32bits(dotF32Go(row, x)), "cols %d row %d: the portable dot is symmetric", cols, r)
		}
	}
}

// TestMulMatsPrefillEqualsDecode checks that the n-token path of mulMats
// computes each output exactly as the single-token path.
func TestMulMatsPrefillEqualsDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range append([]swarm.DType{swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16, swarm.DTypeQ8_0}, quantTypes...) {
		a := randomMatrix(rng, 300, 256, dt)
		b := randomMatrix(rng, 77, 256, dt)
		const n = 5
		x := make([]float32, n*256)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		ya, yb := make([]float32, n*300), make([]float32, n*77)
		mulMats([][]float32{ya, yb}, []*matrix{a, b}, x, n)
		for tk := range n {
			za, zb := make([]float32, 300), make([]float32, 77)
			mulMats([][]float32{za, zb}, []*matrix{a, b}, x[tk*256:(tk+1)*256], 1)
			require.Equal(t, za, ya[tk*300:(tk+1)*300], "%v token %d", dt, tk)
			require.Equal(t, zb, yb[tk*77:(tk+1)*77], "%v token %d", dt, tk)
		}
	}
}

// TestParallelFor checks that every index is visited exactly once for
// sizes below and above the parallel threshold.
func TestParallelFor(t *testing.T) {
	for _, n := range []int{0, 1, 2, 100, 4096, 100003} {
		seen := make([]int32, n)
		parallelFor(n, 64, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, v := range seen {
			require.Equal(t, int32(1), v, "n=%d index %d", n, i)
		}
	}
}

// TestHFPermutation checks the permutation against llama.cpp's
// reshape(n_head, 2, hd/2, cols).swapaxes(1, 2) on a small case by hand:
// head size 4: new rows [0 2 1 3] of each head.
func TestHFPermutation(t *testing.T) {
	require.Equal(t, []int{0, 2, 1, 3, 4, 6, 5, 7}, hfPermutation(2, 4))
	require.Equal(t, []int{0, 3, 1, 4, 2, 5}, hfPermutation(1, 6))
}

// TestWidenThenDotIsExact checks the property prefill relies on: widening
// an f16/bf16 row and calling dotF32 gives bit for bit dotF16/dotBF16 of
// the row, dotF32x2 gives bit for bit two dotF32 calls, and the assembly
// widening equals the portable one. Under f16x8 (gemm_x8.go) binary16 rows
// are never widened for a product: there dotF16 must be the f16x8 sum
// (dotF16x8Go) bit for bit, and within float32 rounding of dotF32's.
func TestWidenThenDotIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 5, 8, 31, 32, 40, 100, 4096} {
		x0 := make([]float32, n)
		x1 := make([]float32, n)
		for i := range x0 {
			x0[i], x1[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		for _, dt := range []swarm.DType{swarm.DTypeF16, swarm.DTypeBF16} {
			m := randomMatrix(rng, 1, n, dt)
			wide := make([]float32, n)
			m.rowF32(0, wide)
			portable := make([]float32, n)
			if dt == swarm.DTypeF16 {
				cvtF16Go(portable, m.u16)
			} else {
				cvtBF16Go(portable, m.u16)
			}
			require.Equal(t, portable, wide, "%v n=%d", dt, n)
			if dt == swarm.DTypeF16 && f16x8 {
				require.Equal(t, math.Float32bits(dotF16x8Go(m.u16, x0)), math.Float32bits(m.dotRow(0, x0)), "n=%d", n)
				require.InDelta(t, dotF32(wide, x0), m.dotRow(0, x0), 1e-4*math.Sqrt(float64(n)), "n=%d", n)
				continue
			}
			require.Equal(t, m.dotRow(0, x0), dotF32(wide, x0), "%v n=%d", dt, n)
		}
		a := randomMatrix(rng, 1, n, swarm.DTypeF32).f32
		y0, y1 := dotF32x2(a, x0, x1)
		require.Equal(t, dotF32(a, x0), y0, "n=%d", n)
		require.Equal(t, dotF32(a, x1), y1, "n=%d", n)
	}
}
