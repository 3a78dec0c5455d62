package blocks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/swarmllm/swarm/swarm"
)

// Benchmarks of the decode hot path on a 7B-shaped block (Llama 2 7B:
// d_model 4096, ffn 11008, 32 heads, 32 KV heads) built in memory, next to
// this machine's memory bandwidth. Batch-1 decode reads every weight once
// per token, so GB/s of weights read against the bandwidth says how close
// the kernels get to the hardware limit. Run with
//
//	go test -run '^$' -bench 'DecodeBlock7B|MemoryBandwidth' -count 5 ./blocks/

// llama7B is the shape of one Llama 2 7B block.
var llama7B = swarm.ModelInfo{
	Name: "llama-7b-block", Arch: "llama", NBlocks: 1, DModel: 4096, NHeads: 32, NKVHeads: 32, HeadDim: 128,
	FFNDim: 11008, Vocab: 32000, MaxSeqLen: 4096, RopeTheta: 10000, NormEps: 1e-5,
	CacheBytesPerToken: 2 * 32 * 128 * 4,
}

// fillPattern fills dst by repeating a random block of n values of type T
// made by gen: random enough for timing, fast to build for 800 MB.
func fillPattern[T any](dst []T, rng *rand.Rand, gen func(*rand.Rand) T) {
	const n = 4099 // prime, so rows do not all see the same values
	pat := make([]T, min(n, len(dst)))
	for i := range pat {
		pat[i] = gen(rng)
	}
	for i := 0; i < len(dst); i += len(pat) {
		copy(dst[i:], pat)
	}
}

// benchMatrix makes a [rows, cols] matrix of dtype dt with N(0, 1/cols)
// values.
func benchMatrix(rng *rand.Rand, rows, cols int, dt swarm.DType) *matrix {
	m, err := newMatrix(rows, cols, dt)
	if err != nil {
		panic(err)
	}
	val := func(r *rand.Rand) float32 { return float32(r.NormFloat64()) / 64 }
	switch dt {
	case swarm.DTypeF32:
		fillPattern(m.f32, rng, val)
	case swarm.DTypeF16:
		fillPattern(m.u16, rng, func(r *rand.Rand) uint16 { return f32ToF16(val(r)) })
	case swarm.DTypeBF16:
		fillPattern(m.u16, rng, func(r *rand.Rand) uint16 { return f32ToBF16(val(r)) })
	default: // quantized: one random row, repeated
		blk := randomMatrix(rng, 1, cols, dt).q
		for i := 0; i < len(m.q); i += len(blk) {
			copy(m.q[i:], blk)
		}
	}
	return m
}

// benchEngine builds an engine of one block of shape info in dtype dt.
func benchEngine(b *testing.B, info swarm.ModelInfo, dt swarm.DType) *cpuEngine {
	rng := rand.New(rand.NewPCG(1, 1))
	d, q, kv, f := info.DModel, info.NHeads*info.HeadDim, info.NKVHeads*info.HeadDim, info.FFNDim
	norm := make([]float32, d)
	for i := range norm {
		norm[i] = 1
	}
	l := &layer{
		attnNorm: norm, ffnNorm: norm,
		wq: benchMatrix(rng, q, d, dt), wk: benchMatrix(rng, kv, d, dt), wv: benchMatrix(rng, kv, d, dt),
		wo: benchMatrix(rng, d, q, dt), w1: benchMatrix(rng, f, d, dt), w2: benchMatrix(rng, d, f, dt),
		w3: benchMatrix(rng, f, d, dt),
	}
	info.DType = dt
	info.BlockBytes = l.bytes()
	e, err := newEngine(info, archParams{}, swarm.Span{Start: 0, End: 1}, []*layer{l}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkDecodeBlock7B times one decode step (one token) through one
// 7B-shaped block: ns/op is the decode time per block per token, tau of
// paper 003 Sec. 2.2; GB/s is the weight bytes read per second. Positions
// cycle through 0..255 so the attention cost is that of a short context.
func BenchmarkDecodeBlock7B(b *testing.B) {
	for _, dt := range []swarm.DType{swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16, swarm.DTypeQ8_0, swarm.DTypeQ4_K, swarm.DTypeQ6_K} {
		b.Run(dt.String(), func(b *testing.B) {
			e := benchEngine(b, llama7B, dt)
			defer e.Close()
			const maxLen = 256
			s, err := e.NewSession(e.Span(), maxLen)
			if err != nil {
				b.Fatal(err)
			}
			x := make([]float32, llama7B.DModel)
			for i := range x {
				x[i] = float32(i%7) / 7
			}
			b.SetBytes(e.WeightBytes())
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Forward(context.Background(), i%maxLen, x, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(e.WeightBytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkPrefillBlock7B times a prefill of n tokens through one
// 7B-shaped block (the matrix-matrix path); ns/op is per n
// tokens.
func BenchmarkPrefillBlock7B(b *testing.B) {
	for _, c := range []struct {
		dt swarm.DType
		n  int
	}{{swarm.DTypeF16, 1}, {swarm.DTypeF16, 16}, {swarm.DTypeF16, 64}, {swarm.DTypeF16, 512}, {swarm.DTypeQ8_0, 64}, {swarm.DTypeQ8_0, 512}, {swarm.DTypeQ4_K, 512}, {swarm.DTypeQ4_K, 64}, {swarm.DTypeQ6_K, 64}} {
		n := c.n
		b.Run(fmt.Sprintf("%s/tokens=%d", c.dt, n), func(b *testing.B) {
			e := benchEngine(b, llama7B, c.dt)
			defer e.Close()
			s, err := e.NewSession(e.Span(), n)
			if err != nil {
				b.Fatal(err)
			}
			x := make([]float32, n*llama7B.DModel)
			for i := range x {
				x[i] = float32(i%7) / 7
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Forward(context.Background(), 0, x, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(n)*1e3, "ms/token")
		})
	}
}

// BenchmarkMemoryBandwidth reads a 1 GiB []float32 per op with 1 and with
// all cores: "sum" with a plain Go loop, "dot" with the dot-product kernel
// the engine uses (dotF32 of the array with itself, so each byte comes from
// memory once). GB/s is the bytes read per second.
func BenchmarkMemoryBandwidth(b *testing.B) {
	const n = 1 << 28 // 1 GiB of float32
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(i & 1023)
	}
	for _, kind := range []string{"sum", "dot"} {
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", kind, workers), func(b *testing.B) {
				b.SetBytes(4 * n)
				var sink float32
				for b.Loop() {
					parts := make([]float32, workers)
					var wg sync.WaitGroup
					for w := range workers {
						wg.Go(func() {
							lo, hi := w*n/workers, (w+1)*n/workers
							if kind == "sum" {
								parts[w] = sumF32(a[lo:hi])
								return
							}
							const chunk = 1 << 16
							for i := lo; i < hi; i += chunk {
								c := a[i:min(i+chunk, hi)]
								parts[w] += dotF32(c, c)
							}
						})
					}
					wg.Wait()
					for _, p := range parts {
						sink += p
					}
				}
				b.ReportMetric(4*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				_ = sink
			})
		}
	}
}

// BenchmarkParallelRows times decode's product (dotF16Rows, one input) over
// a 128 MiB binary16 matrix [32768, 2048] split into operations of 4, 16 or
// 128 MiB, each run through parallelFor as the engine runs one weight
// matrix, and the whole matrix on one goroutine: GB/s is weight bytes read
// per second. The gap between the operation sizes is what the pool's
// hand-offs cost a decode step of a small model (TinyLlama's matrices are
// 8-46 MiB).
func BenchmarkParallelRows(b *testing.B) {
	const rows, cols = 32768, 2048
	w := make([]uint16, rows*cols)
	for i := range w {
		w[i] = uint16(i & 0x3bff)
	}
	x := make([]float32, cols)
	out := make([]float32, rows)
	for _, opRows := range []int{1024, 4096, rows, 0} {
		name := fmt.Sprintf("op=%dMiB", opRows*cols*2>>20)
		if opRows == 0 {
			name = "serial"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(rows * cols * 2)
			for b.Loop() {
				if opRows == 0 {
					dotF16Rows(w, cols, x, out)
					continue
				}
				for r0 := 0; r0 < rows; r0 += opRows {
					parallelFor(opRows, cols, func(lo, hi int) {
						dotF16Rows(w[(r0+lo)*cols:(r0+hi)*cols], cols, x, out[r0+lo:r0+hi])
					})
				}
			}
			b.ReportMetric(rows*cols*2*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// sumF32 sums a with eight accumulators.
func sumF32(a []float32) float32 {
	var s [8]float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		v := a[i : i+8 : i+8]
		s[0] += v[0]
		s[1] += v[1]
		s[2] += v[2]
		s[3] += v[3]
		s[4] += v[4]
		s[5] += v[5]
		s[6] += v[6]
		s[7] += v[7]
	}
	for ; i < len(a); i++ {
		s[0] += a[i]
	}
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]
}

// BenchmarkDot times one kernel call on a 4096-element row that stays in
// cache (compute speed, not memory): GB/s is weight bytes per second.
func BenchmarkDot(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n = 4096
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, dt := range append([]swarm.DType{swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16, swarm.DTypeQ8_0}, quantTypes...) {
		m := randomMatrix(rng, 1, n, dt)
		b.Run(dt.String(), func(b *testing.B) {
			b.SetBytes(m.bytes())
			var sink float32
			for b.Loop() {
				sink += m.dotRow(0, x)
			}
			_ = sink
		})
	}
}

// BenchmarkDecodeBatch7B times one ForwardBatch of b single-token decode
// steps of b sessions through one 7B-shaped block: ns/op is the time of the
// whole batch per block; tok/s counts the b steps.
func BenchmarkDecodeBatch7B(b *testing.B) {
	for _, dt := range []swarm.DType{swarm.DTypeF16, swarm.DTypeQ8_0} {
		for _, n := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/batch=%d", dt, n), func(b *testing.B) {
				e := benchEngine(b, llama7B, dt)
				defer e.Close()
				const pos = 8
				x := make([]float32, (pos+1)*llama7B.DModel)
				for i := range x {
					x[i] = float32(i%7) / 7
				}
				steps := make([]Step, n)
				for i := range steps {
					s, err := e.NewSession(e.Span(), pos+1)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Forward(context.Background(), 0, x[:pos*llama7B.DModel], pos); err != nil {
						b.Fatal(err)
					}
					steps[i] = Step{Session: s, Pos: pos, Hidden: x[:llama7B.DModel], NTokens: 1}
				}
				b.ResetTimer()
				for b.Loop() {
					for _, r := range e.ForwardBatch(context.Background(), steps) {
						if r.Err != nil {
							b.Fatal(r.Err)
						}
					}
				}
				perStep := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(n)/perStep, "tok/s")
				flops := 2 * float64(e.WeightBytes()) * 32 / float64(dt.Bytes(32)) // ~2 FLOPs per weight
				b.ReportMetric(float64(n)*flops/perStep/1e9, "GFLOP/s")
			})
		}
	}
}
