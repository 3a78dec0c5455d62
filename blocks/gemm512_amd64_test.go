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

// TestGemmAVX512MatchesAVX2 requires the AVX-512 3x4 kernels to leave every
// partial sum exactly as the AVX2 ones do, from the same non-zero starting
// accumulators (a row done in pieces) and for 1 and many blocks.
func TestGemmAVX512MatchesAVX2(t *testing.T) {
	if !avx512Kernels {
		t.Skip("this CPU has no AVX-512 F/DQ/VL: the AVX2 kernels are the ones in use")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, blocks := range []int{1, 3, 128} {
		const lda, ldx = 4200, 4160 // strides larger than the rows read
		a := make([]float32, 3*lda)
		w := make([]uint16, 3*lda)
		x := make([]float32, 4*ldx)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
			w[i] = f32ToF16(a[i])
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var start [gemmAcc]float32
		for i := range start {
			start[i] = float32(rng.NormFloat64())
		}
		acc2, acc512 := start, start
		gemmF32x3x4AVX2(a, lda, x, ldx, blocks, &acc2)
		gemmF32x3x4AVX512(a, lda, x, ldx, blocks, &acc512)
		for i := range acc2 {
			require.Equal(t, math.Float32bits(acc2[i]), math.Float32bits(acc512[i]), "f32, %d blocks, acc %d", blocks, i)
		}
		acc2, acc512 = start, start
		gemmF16x3x4AVX2(w, lda, x, ldx, blocks, &acc2)
		gemmF16x3x4AVX512(w, lda, x, ldx, blocks, &acc512)
		for i := range acc2 {
			require.Equal(t, math.Float32bits(acc2[i]), math.Float32bits(acc512[i]), "f16, %d blocks, acc %d", blocks, i)
		}
		require.NotEqual(t, start, acc512, "the kernel added nothing")
	}
}

// TestUseGemmKeepsKernelSet: the benchmarks switch the GEMM kernels with
// useGemm and switch them back; the name Kernels reports (which servers
// advertise) must come back whole, "+vnni" included.
func TestUseGemmKeepsKernelSet(t *testing.T) {
	before := Kernels()
	useGemm(false)
	useGemm(avx512Kernels)
	require.Equal(t, before, Kernels())
	if vnniKernels {
		require.Equal(t, "avx2+avx512+vnni", before)
	}
}

// TestGemmF16x6x4MatchesTwo3x4 requires the 6-row x 4-input binary16
// kernel to leave every partial sum exactly as two AVX2 3x4 calls (rows
// 0..2 and 3..5) do, from non-zero starting accumulators, for 0, 1 and many
// blocks, with strides that are not multiples of the block.
func TestGemmF16x6x4MatchesTwo3x4(t *testing.T) {
	if !avx512Kernels {
		t.Skip("this CPU has no AVX-512 F/DQ/VL: the AVX2 kernels are the ones in use")
	}
	require.True(t, gemm6x4, "with AVX-512, gemmTile's binary16 tiles run the 6-row kernel")
	rng := rand.New(rand.NewPCG(7, 8))
	for _, blocks := range []int{0, 1, 5, 128} {
		const lda, ldx = 4200, 4176
		w := make([]uint16, 6*lda)
		x := make([]float32, 4*ldx)
		for i := range w {
			w[i] = f32ToF16(float32(rng.NormFloat64()))
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var start [2 * gemmAcc]float32
		for i := range start {
			start[i] = float32(rng.NormFloat64())
		}
		lo, hi := [gemmAcc]float32(start[:gemmAcc]), [gemmAcc]float32(start[gemmAcc:])
		gemmF16x3x4AVX2(w, lda, x, ldx, blocks, &lo)
		gemmF16x3x4AVX2(w[3*lda:], lda, x, ldx, blocks, &hi)
		got := start
		gemmF16x6x4AVX512(w, lda, x, ldx, blocks, &got)
		for i := range lo {
			require.Equal(t, math.Float32bits(lo[i]), math.Float32bits(got[i]), "%d blocks, rows 0..2, acc %d", blocks, i)
			require.Equal(t, math.Float32bits(hi[i]), math.Float32bits(got[gemmAcc+i]), "%d blocks, rows 3..5, acc %d", blocks, i)
		}
		if blocks > 0 {
			require.NotEqual(t, start, got, "the kernel added nothing")
		}
	}
}

// BenchmarkGemmF16x3x4 times one 3-row x 4-input tile of binary16 weights
// over 4096 columns with each kernel (GFLOP/s reported), the inner loop of
// batched decode and prefill on f16 spans.
func BenchmarkGemmF16x3x4(b *testing.B) {
	const cols = 4096
	w := make([]uint16, 3*cols)
	x := make([]float32, 4*cols)
	for i := range w {
		w[i] = f32ToF16(float32(i%7) - 3)
	}
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	kernels := map[string]func([]uint16, int, []float32, int, int, *[gemmAcc]float32){"avx2": gemmF16x3x4AVX2}
	if avx512Kernels {
		kernels["avx512"] = gemmF16x3x4AVX512
	}
	for _, name := range []string{"avx2", "avx512"} {
		k, ok := kernels[name]
		if !ok {
			continue
		}
		b.Run(fmt.Sprint(name), func(b *testing.B) {
			var acc [gemmAcc]float32
			for b.Loop() {
				k(w, cols, x, cols, cols/32, &acc)
			}
			b.ReportMetric(float64(2*3*4*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	if avx512Kernels {
		// 6 rows x 4 inputs: each input load serves 6 rows.
		w6 := make([]uint16, 6*cols)
		for i := range w6 {
			w6[i] = f32ToF16(float32(i%7) - 3)
		}
		b.Run("avx512-6x4", func(b *testing.B) {
			var acc [2 * gemmAcc]float32
			for b.Loop() {
				gemmF16x6x4AVX512(w6, cols, x, cols, cols/32, &acc)
			}
			b.ReportMetric(float64(2*6*4*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMulRowsF16 times the products of binary16 matrices with n inputs
// for each kernel set: "avx2" (dotF16AVX2's four accumulators: the 3x4
// tiles of gemmTile), "f16x8" (one accumulator a row: mulRowsF16x8, what
// CPUs without AVX-512 run) and "avx512" (where the CPU has it). mulRows
// of [4096, 4096] on one goroutine measures the tiling around the kernel
// (cache reuse of rows and inputs) at decode-batch and prefill sizes;
// mulMats of the 7B shapes [11008, 4096] (w1, w3) and [4096, 11008] (w2)
// on every core is what a batch's feed-forward step does, with the rows
// streaming from memory.
func BenchmarkMulRowsF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	square := benchMatrix(rng, 4096, 4096, swarm.DTypeF16)
	defer useGemm(avx512Kernels)
	defer useF16x8(f16x8)
	sets := []string{"avx2", "f16x8"}
	if avx512Kernels {
		sets = append(sets, "avx512")
	}
	use := func(set string) {
		useGemm(set == "avx512")
		useF16x8(set == "f16x8")
	}
	inputs := func(n, cols int) []float32 {
		x := make([]float32, n*cols)
		for i := range x {
			x[i] = float32(i%7) / 7
		}
		return x
	}
	for _, set := range sets {
		for _, n := range []int{16, 64} {
			b.Run(fmt.Sprintf("%s/rows/n=%d", set, n), func(b *testing.B) {
				use(set)
				m := square
				x := inputs(n, m.cols)
				out := make([]float32, n*m.rows)
				for b.Loop() {
					in := prepareInputs([]*matrix{m}, x, n, m.cols)
					m.mulRows(out, in, n, 0, m.rows)
					in.release()
				}
				b.ReportMetric(2*float64(m.rows*m.cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
	if testing.Short() {
		return
	}
	gate, down := benchMatrix(rng, 11008, 4096, swarm.DTypeF16), benchMatrix(rng, 4096, 11008, swarm.DTypeF16)
	for _, set := range sets {
		for _, m := range []*matrix{gate, down} {
			const n = 16
			b.Run(fmt.Sprintf("%s/mats/%dx%d/n=%d", set, m.rows, m.cols, n), func(b *testing.B) {
				use(set)
				x := inputs(n, m.cols)
				out := make([]float32, n*m.rows)
				for b.Loop() {
					mulMats([][]float32{out}, []*matrix{m}, x, n)
				}
				b.ReportMetric(2*float64(m.rows*m.cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestQ8_0KernelsMatchGo requires the VNNI kernels' lanes to equal the
// portable lanes of their format (q8_0Lanes, q4_0Lanes, ...): integer lane sums are exact
// and the float32 steps are the same; fma32 may round twice, so equality
// is checked to 1 ulp of the lane values' scale and exactly for the great
// majority. The rows kernel must give reduceLanes of the tile's lanes bit
// for bit.
func TestQ8_0KernelsMatchGo(t *testing.T) {
	if !vnniKernels {
		t.Skip("this CPU has no AVX-512 VNNI: the portable Q8_0 x Q8 kernel is the one in use")
	}
	type kernels struct {
		tile  func(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool)
		one   func(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32)
		rows  func(w []byte, ldw int, a []byte, units int, nrows int, out []float32)
		lanes func(w, a []byte, nb int, acc *[q8Lanes]float32)
	}
	for dt, k := range map[swarm.DType]kernels{
		swarm.DTypeQ8_0:   {q8_0x3x4AVX512, q8_0x1x1AVX512, q8_0RowsAVX512, q8_0Lanes},
		swarm.DTypeQ4_0:   {q4_0x3x4AVX512, q4_0x1x1AVX512, q4_0RowsAVX512, q4_0Lanes},
		swarm.DTypeQ4_1:   {q4_1x3x4AVX512, q4_1x1x1AVX512, q4_1RowsAVX512, q4_1Lanes},
		swarm.DTypeQ5_0:   {q5_0x3x4AVX512, q5_0x1x1AVX512, q5_0RowsAVX512, q5_0Lanes},
		swarm.DTypeQ5_1:   {q5_1x3x4AVX512, q5_1x1x1AVX512, q5_1RowsAVX512, q5_1Lanes},
		swarm.DTypeIQ4_NL: {iq4_nlx3x4AVX512, iq4_nlx1x1AVX512, iq4_nlRowsAVX512, iq4_nlLanes},
	} {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, cols := range []int{32, 96, 1024} {
			q8KernelsMatchGo(t, rng, dt, cols, k.tile, k.one, k.rows, k.lanes)
		}
	}
}

func q8KernelsMatchGo(t *testing.T, rng *rand.Rand, dt swarm.DType, cols int,
	tileK func(w []byte, ldw int, a []byte, lda int, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool),
	oneK func(w []byte, ldw int, a []byte, lda int, nb int, acc *[q8Lanes]float32),
	rowsK func(w []byte, ldw int, a []byte, units int, nrows int, out []float32),
	lanes func(w, a []byte, nb int, acc *[q8Lanes]float32)) {
	m := randomMatrix(rng, 4, cols, dt)
	x := make([]float32, 4*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	a := quantizeActs(x, cols, 4, cols)
	defer a.release()
	rb, nb := m.rowBytes(), cols/32
	var tile [3 * 4 * q8Lanes]float32
	tileK(m.q, rb, a.buf, a.stride, nb, &tile, true)
	var one [q8Lanes]float32
	oneK(m.q[rb:], 0, a.row(2), 0, nb, &one)
	rows := make([]float32, 3)
	rowsK(m.q, rb, a.row(1), nb, 3, rows)
	same := 0
	for r := range 3 {
		for tt := range 4 {
			var want [q8Lanes]float32
			lanes(m.q[r*rb:(r+1)*rb], a.row(tt), nb, &want)
			for j := range q8Lanes {
				got := tile[(r*4+tt)*q8Lanes+j]
				require.InDelta(t, want[j], got, 1e-5*float64(abs32(want[j])+1), "%v cols %d row %d input %d lane %d", dt, cols, r, tt, j)
				if got == want[j] {
					same++
				}
				if r == 1 && tt == 2 {
					require.Equal(t, math.Float32bits(got), math.Float32bits(one[j]), "%v cols %d: 1x1 kernel, lane %d", dt, cols, j)
				}
			}
			if tt == 1 {
				lanesOf := (*[q8Lanes]float32)(tile[(r*4+tt)*q8Lanes:])
				require.Equal(t, math.Float32bits(reduceLanes(lanesOf)), math.Float32bits(rows[r]), "%v cols %d: rows kernel, row %d", dt, cols, r)
			}
		}
	}
	require.GreaterOrEqual(t, same, 3*4*q8Lanes*9/10)
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

// TestKQuantKernelsMatchGo requires the VNNI Q4_K and Q6_K kernels'
// accumulators, for every tile width T = 1..12, to equal the portable
// ones' (to fma32's double rounding, and exactly for nearly all), the
// same output's accumulators to be bit-identical whatever T, and the rows
// kernel's results to equal reduceLanes of the tile's bit for bit.
func TestKQuantKernelsMatchGo(t *testing.T) {
	if !vnniKernels {
		t.Skip("this CPU has no AVX-512 VNNI: the portable K-quant x Q8_K kernels are the ones in use")
	}
	type kernels struct {
		tiles [kTileInputs + 1]func(w []byte, a []byte, lda int, nsb int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int)
		rows  func(w []byte, ldw int, a []byte, units int, nrows int, out []float32)
		lanes func(w, a []byte, nsb int, acc *[q8Lanes]float32)
	}
	for dt, k := range map[swarm.DType]kernels{
		swarm.DTypeQ4_K:   {q4_KTilesAVX512, q4_KRowsAVX512, q4_KLanes},
		swarm.DTypeQ5_K:   {q5_KTilesAVX512, q5_KRowsAVX512, q5_KLanes},
		swarm.DTypeQ3_K:   {q3_KTilesAVX512, q3_KRowsAVX512, q3_KLanes},
		swarm.DTypeQ2_K:   {q2_KTilesAVX512, q2_KRowsAVX512, q2_KLanes},
		swarm.DTypeQ6_K:   {q6_KTilesAVX512, q6_KRowsAVX512, q6_KLanes},
		swarm.DTypeIQ4_XS: {iq4_xsTilesAVX512, iq4_xsRowsAVX512, iq4_XSLanes},
	} {
		rng := rand.New(rand.NewPCG(15, 16))
		for _, cols := range []int{256, 1024} {
			m := randomMatrix(rng, 3, cols, dt)
			x := make([]float32, kTileInputs*cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			a := quantizeActsK(x, cols, kTileInputs, cols)
			rb, nsb := m.rowBytes(), cols/256
			rows := make([]float32, 3)
			k.rows(m.q, rb, a.row(1), nsb, 3, rows)
			same, all := 0, 0
			for r := range 3 {
				var first [3 * 4 * q8Lanes]float32 // T = 12
				k.tiles[kTileInputs](m.q[r*rb:], a.buf, a.stride, nsb, &first, true, nil, 0)
				// With out: the reduced outputs at out[t*3], acc left alone.
				out := make([]float32, 3*kTileInputs)
				var scratch [3 * 4 * q8Lanes]float32
				k.tiles[kTileInputs](m.q[r*rb:], a.buf, a.stride, nsb, &scratch, true, out, 3)
				require.Equal(t, [3 * 4 * q8Lanes]float32{}, scratch, "acc is not stored when out is given")
				for tt := range kTileInputs {
					require.Equal(t, math.Float32bits(reduceLanes((*[q8Lanes]float32)(first[tt*q8Lanes:]))), math.Float32bits(out[3*tt]), "%s: cols %d row %d: out of input %d", dt, cols, r, tt)
				}
				for tt := range kTileInputs {
					var want [q8Lanes]float32
					k.lanes(m.q[r*rb:(r+1)*rb], a.row(tt), nsb, &want)
					for j := range q8Lanes {
						got := first[tt*q8Lanes+j]
						require.InDelta(t, want[j], got, 1e-5*float64(abs32(want[j])+1), "%s: cols %d row %d input %d lane %d", dt, cols, r, tt, j)
						if got == want[j] {
							same++
						}
						all++
					}
				}
				require.Equal(t, math.Float32bits(reduceLanes((*[q8Lanes]float32)(first[q8Lanes:]))), math.Float32bits(rows[r]), "%s: cols %d: rows kernel, row %d", dt, cols, r)
				for T := 1; T < kTileInputs; T++ {
					var tile [3 * 4 * q8Lanes]float32
					for i := range tile {
						tile[i] = 1e9 // zero must ignore what acc held
					}
					k.tiles[T](m.q[r*rb:], a.buf[(kTileInputs-T)*a.stride:], a.stride, nsb, &tile, true, nil, 0)
					for tt := range T {
						for j := range q8Lanes {
							require.Equal(t, math.Float32bits(first[(kTileInputs-T+tt)*q8Lanes+j]), math.Float32bits(tile[tt*q8Lanes+j]),
								"%s: cols %d row %d: T=%d input %d lane %d", dt, cols, r, T, tt, j)
						}
					}
				}
			}
			require.GreaterOrEqual(t, same, all*9/10, "%s", dt)
			a.release()
		}
	}
}
