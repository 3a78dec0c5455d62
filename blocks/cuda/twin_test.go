//go:build !purego

package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/parity"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// (Not built with -tags purego: these tests are of the CUDA engine's own
// code, which the portable CPU kernels do not change; CI runs them once.)

// twin is an in-memory twin of the CUDA driver and cuBLAS, for running the
// CUDA engine's own code (weights upload, scratch, caches, every launch
// and its arguments, chunking, replay) on a machine without a GPU. Device
// memory is Go memory; a kernel launch runs the real kernels.cu through the
// host emulator (emulate_test.go), one process per launch, with the
// buffers it points into; cublasGemmEx is a plain Go loop with float32
// sums. What it cannot say: anything about the PTX, the GPU's float
// behaviour or cuBLAS's algorithms.
type twin struct {
	t      *testing.T
	emu    string
	mu     sync.Mutex
	allocs map[uint64][]byte // base address -> memory
	fns    map[uintptr]kernel
	// launched counts each kernel's launches (under mu).
	launched [numKernels]int
}

// launches returns how many times each kernel has been launched.
func (tw *twin) launches() [numKernels]int {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.launched
}

// kernelParams are the parameter kinds of each kernel, in order: p a
// device pointer, i an int, f a float, S a segment table (segTable).
var kernelParams = [numKernels]string{
	kRMSNorm: "ppppif", kAddBias: "ppii", kRoPE: "pppiii", kStoreKV: "ppiiS",
	kAttention: "pppiiiiifipS", kGLU: "pppii", kToF16: "ppi", kAdd: "ppi", kF16ToF32: "ppi",
	kMatvec1: "piippippippiipi", kMatvec4: "piippippippiipi", kMatvec16: "piippippippiipi",
	kMMA8: "piippippippiipi", kMMA16: "piippippippiipi", kMMA64: "piippippippiipi",
}

// newTwinGPU returns a gpu whose driver and cuBLAS are a twin.
func newTwinGPU(t *testing.T) (*gpu, *twin) { return newTwinGPUWith(t, true) }

// newTwinGPUWith is newTwinGPU, opened without cuBLAS unless withBLAS (as
// openGPU does without SWARM_CUDA_GEMM=cublas).
func newTwinGPUWith(t *testing.T, withBLAS bool) (*gpu, *twin) {
	tw := &twin{t: t, emu: emulator(t), allocs: map[uint64][]byte{}, fns: map[uintptr]kernel{}}
	ok := func() int32 { return 0 }
	d := &driver{
		cuGetErrorName:            func(r int32, s **byte) int32 { return 1 },
		cuGetErrorString:          func(r int32, s **byte) int32 { return 1 },
		cuDeviceGet:               func(dev *int32, i int32) int32 { *dev = i; return 0 },
		cuDevicePrimaryCtxRetain:  func(ctx *uintptr, dev int32) int32 { *ctx = 1; return 0 },
		cuDevicePrimaryCtxRelease: func(int32) int32 { return ok() },
		cuCtxSetCurrent:           func(uintptr) int32 { return ok() },
		cuModuleLoadData:          func(m *uintptr, _ unsafe.Pointer) int32 { *m = 1; return 0 },
		cuModuleUnload:            func(uintptr) int32 { return ok() },
		cuModuleGetFunction: func(fn *uintptr, _ uintptr, name string) int32 {
			for k, n := range kernelNames {
				if n == name {
					*fn = uintptr(k + 1)
					tw.fns[*fn] = kernel(k)
					return 0
				}
			}
			return 500 // CUDA_ERROR_NOT_FOUND
		},
		cuStreamCreate:      func(s *uintptr, _ uint32) int32 { *s = 1; return 0 },
		cuStreamDestroy:     func(uintptr) int32 { return ok() },
		cuStreamSynchronize: func(uintptr) int32 { return ok() },
		cuMemGetInfo:        func(free, total *uint64) int32 { *free, *total = 1<<30, 1<<30; return 0 },
		cuMemAlloc:          tw.alloc,
		cuMemFree: func(p uint64) int32 {
			tw.mu.Lock()
			defer tw.mu.Unlock()
			delete(tw.allocs, p)
			return 0
		},
		cuMemsetD8Async: func(p uint64, v uint8, n uint64, _ uintptr) int32 {
			b := tw.mem(p, int(n))
			for i := range b {
				b[i] = v
			}
			return 0
		},
		cuMemcpyHtoDAsync: func(dst uint64, src unsafe.Pointer, n uint64, _ uintptr) int32 {
			copy(tw.mem(dst, int(n)), unsafe.Slice((*byte)(src), n))
			return 0
		},
		cuMemcpyDtoHAsync: func(dst unsafe.Pointer, src uint64, n uint64, _ uintptr) int32 {
			copy(unsafe.Slice((*byte)(dst), n), tw.mem(src, int(n)))
			return 0
		},
		cuLaunchKernel: tw.launch,
	}
	b := &cublas{
		cublasCreate:          func(h *uintptr) int32 { *h = 1; return 0 },
		cublasDestroy:         func(uintptr) int32 { return ok() },
		cublasSetStream:       func(uintptr, uintptr) int32 { return ok() },
		cublasGetStatusString: func(int32) *byte { return nil },
		cublasGemmEx:          tw.gemmEx,
	}
	if !withBLAS {
		b = nil
	}
	g, err := newGPU(d, b, Device{Name: "twin", Major: 9}, []byte("twin\x00"))
	require.NoError(t, err)
	return g, tw
}

func (tw *twin) alloc(p *uint64, n uint64) int32 {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	buf := make([]byte, n)
	*p = uint64(uintptr(unsafe.Pointer(&buf[0])))
	tw.allocs[*p] = buf
	return 0
}

// find returns the allocation holding address p and p's offset in it.
func (tw *twin) find(p uint64) (base uint64, off int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	for b, buf := range tw.allocs {
		if p >= b && p < b+uint64(len(buf)) {
			return b, int(p - b)
		}
	}
	tw.t.Fatalf("twin: address %#x is in no allocation", p)
	return 0, 0
}

// mem is the n bytes of device memory at p.
func (tw *twin) mem(p uint64, n int) []byte {
	b, off := tw.find(p)
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.allocs[b][off : off+n]
}

// launch runs the kernel through the host emulator: every allocation an
// argument points into goes out as a file and comes back.
func (tw *twin) launch(fn uintptr, gx, gy, gz, bx, by, bz, shared uint32, _ uintptr, params, _ unsafe.Pointer) int32 {
	k, ok := tw.fns[fn]
	if !ok || gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 {
		tw.t.Fatalf("twin: launch of %d on %dx%dx%d x %dx%dx%d", fn, gx, gy, gz, bx, by, bz)
	}
	tw.mu.Lock()
	tw.launched[k]++
	tw.mu.Unlock()
	kinds := kernelParams[k]
	if kinds == "" {
		tw.t.Fatalf("twin: kernelParams has no entry for %s", kernelNames[k])
	}
	slots := unsafe.Slice((*unsafe.Pointer)(params), len(kinds))
	dir := tw.t.TempDir()
	lines := []string{fmt.Sprintf("kernel %s %d %d", kernelNames[k], gx, bx)}
	files := map[uint64]int{}
	var order []uint64
	var args []string
	// ptr names device pointer v as a file of the job (its allocation,
	// sent once) and an offset in it.
	ptr := func(v uint64) string {
		if v == 0 {
			return "null"
		}
		base, off := tw.find(v)
		id, seen := files[base]
		if !seen {
			id = len(order)
			files[base] = id
			order = append(order, base)
			p := filepath.Join(dir, fmt.Sprint(id))
			require.NoError(tw.t, os.WriteFile(p, tw.allocs[base], 0o644))
			lines = append(lines, fmt.Sprintf("file %d %s", id, p))
		}
		return fmt.Sprintf("ptr %d %d", id, off)
	}
	for i, kind := range kinds {
		v := *(*uint64)(slots[i])
		switch kind {
		case 'i':
			args = append(args, fmt.Sprintf("int %d", int32(uint32(v))))
		case 'f':
			args = append(args, fmt.Sprintf("float %.9g", math.Float32frombits(uint32(v))))
		case 'p':
			args = append(args, ptr(v))
		case 'S':
			// The host emulator takes the table flat: the count, then per
			// segment kc, vc, pos, off, n, ring.
			st := (*segTable)(slots[i])
			args = append(args, fmt.Sprintf("int %d", st.count))
			for s := range int(st.count) {
				args = append(args, ptr(st.kc[s]), ptr(st.vc[s]), fmt.Sprintf("int %d", st.pos[s]),
					fmt.Sprintf("int %d", st.off[s]), fmt.Sprintf("int %d", st.n[s]), fmt.Sprintf("int %d", st.ring[s]))
			}
		}
	}
	job := filepath.Join(dir, "job")
	require.NoError(tw.t, os.WriteFile(job, []byte(strings.Join(append(lines, args...), "\n")+"\n"), 0o644))
	out, err := exec.Command(tw.emu, job).CombinedOutput()
	require.NoError(tw.t, err, "%s: %s", kernelNames[k], out)
	for id, base := range order {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(id)))
		require.NoError(tw.t, err)
		copy(tw.allocs[base], raw)
	}
	return 0
}

// gemmEx is the one product the engine asks for: C (rows x n, float32) =
// A^T (A: cols x rows fp16, lda) times B (cols x n fp16, ldb), column-major,
// float32 sums in column order.
func (tw *twin) gemmEx(_ uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uint64, at, lda int32, b uint64, bt, ldb int32,
	beta unsafe.Pointer, c uint64, ct, ldc, compute, algo int32) int32 {
	require.Equal(tw.t, []int32{cublasOpT, cublasOpN, cudaR16F, cudaR16F, cudaR32F, cublasCompute32F, cublasGemmDefault},
		[]int32{ta, tb, at, bt, ct, compute, algo})
	require.Equal(tw.t, int32(gemmCols), n, "every product is one column tile")
	require.Equal(tw.t, float32(1), *(*float32)(alpha))
	require.Equal(tw.t, float32(0), *(*float32)(beta))
	widen := func(p uint64, ld, cols int) []float32 {
		raw := tw.mem(p, 2*ld*cols)
		w := make([]float32, ld*cols)
		for i := range w {
			w[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
		return w
	}
	am, bm := widen(a, int(lda), int(m)), widen(b, int(ldb), int(n))
	cm := tw.mem(c, 4*int(ldc)*int(n))
	for j := range int(n) {
		bj := bm[j*int(ldb) : j*int(ldb)+int(k)]
		for i := range int(m) {
			ai := am[i*int(lda) : i*int(lda)+int(k)]
			var s float32
			for l, x := range bj {
				s += ai[l] * x
			}
			binary.LittleEndian.PutUint32(cm[4*(j*int(ldc)+i):], math.Float32bits(s))
		}
	}
	return 0
}

// twinBackend builds the CUDA engine on the twin.
type twinBackend struct{ g *gpu }

func (twinBackend) Name() string              { return "cuda-twin" }
func (twinBackend) CacheDType() swarm.DType   { return swarm.DTypeF16 }
func (twinBackend) ComputeDType() swarm.DType { return swarm.DTypeF16 }
func (b twinBackend) NewEngine(t blocks.SpanTensors) (blocks.Engine, error) {
	return newEngine(b.g, t, func(info swarm.ModelInfo) int64 { return blocks.CacheBytesPerToken(info, swarm.DTypeF16) })
}

// The CUDA engine's code on the twin against the CPU engine, through the
// doctor's parity harness: every architecture (biases, q/k norms, post
// norms, sliding windows with rings, GeGLU), a quantized file widened on
// upload, the replay check; the cuBLAS products; and a prefill longer
// than one chunk.
func TestEngineOnTwin(t *testing.T) {
	g, tw := newTwinGPU(t)
	tb := twinBackend{g}
	dir := t.TempDir()
	// compare runs the parity harness on a synthesized model.
	compare := func(t *testing.T, arch, dtype string, seed uint64, prefill, decode int) parity.Report {
		path, err := parity.SynthModel(dir, arch, dtype, seed)
		require.NoError(t, err)
		m, err := blocks.Open(path)
		require.NoError(t, err)
		defer m.Close()
		opts := parity.DefaultOptions()
		opts.Prefill, opts.Decode, opts.Replay = prefill, decode, 2
		rep, err := parity.Compare(context.Background(), blocks.CPU(), tb, m, opts)
		require.NoError(t, err)
		t.Logf("%s %s: max abs %.3g, max rel %.3g (bound %g), replay exact %v, batch %s", arch, dtype, rep.MaxAbsErr, rep.MaxRelErr, rep.Bound, rep.ReplayExact, rep.BatchText())
		require.True(t, rep.Pass, "%v", rep.Failures)
		return rep
	}
	// llama through a quantized file (widened on upload); the others f16.
	cases := []struct{ arch, dtype string }{{synth.ArchLlama, "q4_k"}}
	for _, arch := range synth.Archs {
		if arch != synth.ArchLlama {
			cases = append(cases, struct{ arch, dtype string }{arch, "f16"})
		}
	}
	// The twin is compute capability 9.0: the products default to mma.
	for _, c := range cases {
		t.Run(c.arch+"/"+c.dtype, func(t *testing.T) {
			before := tw.launches()
			rep := compare(t, c.arch, c.dtype, 1, 5, 2)
			require.NotNil(t, rep.BatchExact, "the CUDA engine batches")
			require.Positive(t, rep.MaxAbsErr, "fp16 products differ from the CPU's float32 ones")
			after := tw.launches()
			require.Greater(t, after[kMMA8], before[kMMA8], "the products ran on mma_8")
			for _, k := range []kernel{kMatvec1, kMatvec4, kMatvec16} {
				require.Equal(t, before[k], after[k], "no %s launch", kernelNames[k])
			}
		})
	}
	// The cuBLAS products (SWARM_CUDA_GEMM=cublas) instead of the matvec
	// kernels, with post-norms and sliding windows.
	t.Run("gemma3/f16/cublas", func(t *testing.T) {
		t.Setenv(gemmEnv, "cublas")
		rep := compare(t, synth.ArchGemma3, "f16", 1, 5, 2)
		require.NotNil(t, rep.BatchExact)
	})
	// The CUDA-core products (SWARM_CUDA_GEMM=matvec): llama's SwiGLU and
	// gemma3's GeGLU, post-norms and sliding windows, batch and replay
	// exact.
	for _, arch := range []string{synth.ArchLlama, synth.ArchGemma3} {
		t.Run(arch+"/f16/matvec", func(t *testing.T) {
			t.Setenv(gemmEnv, "matvec")
			before := tw.launches()
			rep := compare(t, arch, "f16", 3, 5, 2)
			require.NotNil(t, rep.BatchExact)
			after := tw.launches()
			require.Greater(t, after[kMatvec1], before[kMatvec1], "decode steps ran on matvec_1")
			require.Greater(t, after[kMatvec4], before[kMatvec4], "passes of 2-4 tokens ran on matvec_4")
			require.Equal(t, before[kMMA8], after[kMMA8], "no mma_8 launch")
		})
	}
	// A prefill of more than one chunk (maxChunk tokens) over a model with
	// sliding windows: the chunks and the rings must still agree.
	t.Run("gemma3/f16/chunked", func(t *testing.T) {
		compare(t, synth.ArchGemma3, "f16", 2, maxChunk+6, 1)
	})
}

// Closing the engine frees every device allocation it made, the caches of
// sessions left open included; those sessions then fail with ErrClosed.
func TestEngineCloseFreesDeviceMemory(t *testing.T) {
	g, tw := newTwinGPU(t)
	path, err := parity.SynthModel(t.TempDir(), synth.ArchLlama, "f16", 1)
	require.NoError(t, err)
	m, err := blocks.Open(path)
	require.NoError(t, err)
	defer m.Close()
	e, err := m.LoadSpanWith(twinBackend{g}, swarm.Span{Start: 0, End: m.Info().NBlocks})
	require.NoError(t, err)
	require.Equal(t, e.(*engine).weights, e.WeightBytes(), "admission counts the fp16 bytes on the device")
	a, err := e.NewSession(e.Span(), 16)
	require.NoError(t, err)
	b, err := e.NewSession(e.Span(), 16)
	require.NoError(t, err)
	require.Equal(t, e.Info().SpanCacheBytes(e.Span(), 16), a.CacheBytes())
	_, err = a.Forward(context.Background(), 0, make([]float32, 2*m.Info().DModel), 2)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NotEmpty(t, tw.allocs)
	require.NoError(t, e.Close())
	require.Empty(t, tw.allocs, "weights, scratch and the open session's caches are freed")
	_, err = a.Forward(context.Background(), 2, make([]float32, m.Info().DModel), 1)
	require.ErrorIs(t, err, blocks.ErrClosed)
	require.NoError(t, a.Close())
}

// cuBLAS is needed only for SWARM_CUDA_GEMM=cublas: a GPU opened without it
// runs the matvec engine, refuses a cuBLAS engine with a message saying
// why, and an unknown value of the variable is refused naming the choices.
func TestEngineWithoutCuBLAS(t *testing.T) {
	g, _ := newTwinGPUWith(t, false)
	require.Zero(t, g.handle)
	path, err := parity.SynthModel(t.TempDir(), synth.ArchLlama, "f16", 1)
	require.NoError(t, err)
	m, err := blocks.Open(path)
	require.NoError(t, err)
	defer m.Close()
	span := swarm.Span{Start: 0, End: m.Info().NBlocks}
	e, err := m.LoadSpanWith(twinBackend{g}, span)
	require.NoError(t, err)
	s, err := e.NewSession(span, 4)
	require.NoError(t, err)
	_, err = s.Forward(context.Background(), 0, make([]float32, 2*m.Info().DModel), 2)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, e.Close())

	t.Setenv(gemmEnv, "cublas")
	_, err = m.LoadSpanWith(twinBackend{g}, span)
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "opened without cuBLAS")

	t.Setenv(gemmEnv, "cuBLASLt")
	_, err = m.LoadSpanWith(twinBackend{g}, span)
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, `SWARM_CUDA_GEMM="cuBLASLt", want auto (the default), mma, matvec or cublas`)
}
