package cuda

import (
	"fmt"
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// devMat is a weight matrix in device memory: [rows, cols] fp16,
// row-major.
type devMat struct {
	p          uint64
	rows, cols int
}

// gpuLayer is one block's weights on the device; vectors are float32 and 0
// when the architecture has none in that slot.
type gpuLayer struct {
	mats    [blocks.NumSlots]devMat
	vecs    [blocks.NumSlots]uint64
	sliding bool
}

// engine is the CUDA Engine of one span. Forward calls of its sessions
// run one at a time on the device's stream (mu).
type engine struct {
	g         *gpu
	info      swarm.ModelInfo
	span      swarm.Span
	rope      *blocks.RoPETable
	act       int
	attnScale float32
	layers    []*gpuLayer
	weights   int64 // device bytes of the weights
	stored    int64 // s_m * m_j: the span's weight bytes as stored in the file

	mu     sync.Mutex // serializes device work; guards the fields below
	closed bool
	sc     scratch
	allocs []uint64 // weight allocations, freed by Close
	// open are the sessions not closed yet: Close frees their caches too.
	open map[*session]struct{}
	// stage is the host side of a pass's upload (sc.in), reused.
	stage []float32
	prof  *profile // SWARM_CUDA_PROFILE; nil when off
	// cublas makes every matrix product a cuBLAS GEMM (SWARM_CUDA_GEMM=cublas)
	// instead of the matvec kernels.
	cublas bool
	// mma makes the matrix products of rows a multiple of 8 halves wide the
	// tensor-core kernels (the default on compute capability 8.0 and later)
	// instead of matvec.
	mma bool
}

// gemmEnv names the environment variable that picks the matrix products:
//   - unset or "auto": "mma" on compute capability 8.0 and later, else
//     "matvec";
//   - "mma": the engine's tensor-core kernels (kernels.cu, 11: mma.sync
//     tiles of 16 rows and 8 tokens, float32 sums, one read of the weights
//     per pass, fused with the residual addition and the gated activation);
//     rows not a multiple of 8 halves wide take matvec;
//   - "matvec": the engine's CUDA-core kernels (kernels.cu, 10; the same
//     fusions);
//   - "cublas": cublasGemmEx on column tiles of gemmCols tokens (fp16
//     tensor cores, float32 sums).
//
// Each gives every token the same values however the tokens are batched or
// chunked; they differ from each other in the last bits, so the servers of
// one swarm that replay each other's sessions should use one choice.
const gemmEnv = "SWARM_CUDA_GEMM"

// products returns the matrix products SWARM_CUDA_GEMM picks on dev:
// "mma", "matvec" or "cublas". An unknown value, or "mma" on a GPU older
// than compute capability 8.0, is an error naming the choices.
func products(dev Device) (string, error) {
	switch v := os.Getenv(gemmEnv); v {
	case "", "auto":
		if dev.Major >= 8 {
			return "mma", nil
		}
		return "matvec", nil
	case "mma":
		if dev.Major < 8 {
			return "", fmt.Errorf("%w: %s=mma needs mma.sync m16n8k16 tensor cores (compute capability 8.0 or later), cuda:%d is %d.%d", ErrUnavailable, gemmEnv, dev.Ordinal, dev.Major, dev.Minor)
		}
		return v, nil
	case "matvec", "cublas":
		return v, nil
	default:
		return "", fmt.Errorf("%w: %s=%q, want auto (the default), mma, matvec or cublas", ErrUnavailable, gemmEnv, v)
	}
}

// useCuBLAS reports whether SWARM_CUDA_GEMM asks for cuBLAS, checking the
// value as products does. cuBLAS is opened only then (libcublasLt alone
// maps half a gigabyte).
func useCuBLAS() (bool, error) {
	v, err := products(Device{Major: 8})
	return v == "cublas", err
}

var _ blocks.Engine = (*engine)(nil)

// scratch is the device working memory of a forward, grown as needed.
type scratch struct {
	rows, ctx int    // tokens and score columns it was sized for
	in        uint64 // a pass's upload: 4 angle tables [rows, HeadDim/2], then the hidden states [rows, DModel]
	xb2       uint64
	xh        uint64 // fp16 [rows, max(DModel, qDim)]
	q, k, v   uint64
	att       uint64
	hb, up    uint64
	hbh       uint64 // fp16 [rows, FFNDim]
	scores    uint64 // [rows*NHeads, ctx]
}

// maxChunk is the most tokens one pass of a forward runs: longer steps are
// split (chunked prefill), which bounds the attention-score scratch and
// keeps a sliding-window ring from being overwritten by the step's own
// later positions (a chunk never exceeds swarm.SlidingRewind + 1 tokens).
const maxChunk = swarm.SlidingRewind

// newEngine uploads the span's weights: matrices widened to fp16,
// vectors as float32.
func newEngine(g *gpu, t blocks.SpanTensors, cacheBytes func(swarm.ModelInfo) int64) (*engine, error) {
	info, cfg, span := t.Info(), t.Config(), t.Span()
	if info.HeadDim > 256 || info.HeadDim%2 != 0 {
		return nil, fmt.Errorf("%w: head_dim %d, the CUDA kernels take even head sizes up to 256", blocks.ErrFormat, info.HeadDim)
	}
	rope, err := blocks.NewRoPETable(info, cfg)
	if err != nil {
		return nil, err
	}
	info.CacheBytesPerToken = cacheBytes(info)
	scale := cfg.AttnScale
	if scale == 0 {
		scale = math.Sqrt(float64(info.HeadDim))
	}
	act := 0 // kernels.cu glu: 0 SwiGLU, 1 GeGLU
	if cfg.Activation == blocks.ActGELUTanh {
		act = 1
	}
	useBLAS, err := useCuBLAS()
	if err != nil {
		return nil, err
	}
	if useBLAS && g.blas == nil {
		return nil, fmt.Errorf("%w: %s=cublas, but cuda:%d was opened without cuBLAS (set it before the first engine starts)", ErrUnavailable, gemmEnv, g.dev.Ordinal)
	}
	prod, err := products(g.dev)
	if err != nil {
		return nil, err
	}
	e := &engine{g: g, info: info, span: span, rope: rope, act: act, attnScale: float32(scale), prof: newProfile(),
		cublas: useBLAS, mma: prod == "mma"}
	err = g.do(func() error {
		for b := span.Start; b < span.End; b++ {
			l, err := e.uploadLayer(t, b)
			if err != nil {
				return err
			}
			e.layers = append(e.layers, l)
		}
		return g.sync()
	})
	if err != nil {
		e.release()
		return nil, err
	}
	return e, nil
}

// uploadLayer copies block b's tensors to the device (inside do).
func (e *engine) uploadLayer(t blocks.SpanTensors, b int) (*gpuLayer, error) {
	l := &gpuLayer{sliding: e.info.IsSliding(b)}
	for slot := range blocks.NumSlots {
		ti, ok := t.Tensor(b, slot)
		if !ok {
			continue
		}
		e.stored += ti.Bytes()
		if !slot.IsMatrix() {
			v, err := t.Vector(b, slot)
			if err != nil {
				return nil, err
			}
			p, err := e.allocWeights(4 * int64(len(v)))
			if err != nil {
				return nil, err
			}
			if err := e.g.uploadF32(p, v); err != nil {
				return nil, err
			}
			l.vecs[slot] = p
			continue
		}
		m, err := e.uploadMatrix(t, b, slot, ti)
		if err != nil {
			return nil, fmt.Errorf("block %d: tensor %s: %w", b, ti.Name, err)
		}
		l.mats[slot] = m
	}
	return l, nil
}

// uploadMatrix copies one matrix as fp16: f16 rows as they are stored,
// other dtypes widened to float32 on the host (blocks.WidenRows) and
// rounded to fp16 on the device (kernel to_f16), a chunk of rows at a time.
func (e *engine) uploadMatrix(t blocks.SpanTensors, b int, slot blocks.Slot, ti blocks.TensorInfo) (devMat, error) {
	m := devMat{rows: ti.Rows, cols: ti.Cols}
	var err error
	if m.p, err = e.allocWeights(2 * int64(ti.Rows) * int64(ti.Cols)); err != nil {
		return devMat{}, err
	}
	var stage uint64 // float32 staging buffer for widened rows
	var stageLen int
	defer func() {
		if stage != 0 {
			e.g.sync()
			e.g.free(stage)
		}
	}()
	var wide []float32
	err = t.ReadRows(b, slot, func(r0 int, raw []byte) error {
		rows := len(raw) / ti.RowBytes()
		dst := m.p + 2*uint64(r0)*uint64(ti.Cols)
		if ti.DType == swarm.DTypeF16 {
			return e.g.upload(dst, unsafe.Pointer(&raw[0]), len(raw))
		}
		n := rows * ti.Cols
		if cap(wide) < n {
			wide = make([]float32, n)
		}
		wide = wide[:n]
		if err := blocks.WidenRows(ti.DType, raw, ti.Cols, wide); err != nil {
			return err
		}
		if stageLen < n {
			if stage != 0 {
				if err := e.g.sync(); err != nil {
					return err
				}
				e.g.free(stage)
				stage = 0
			}
			p, err := e.g.alloc(4 * int64(n))
			if err != nil {
				return err
			}
			stage, stageLen = p, n
		}
		if err := e.g.uploadF32(stage, wide); err != nil {
			return err
		}
		if err := e.g.launch(kToF16, gridFor(n), 256, argPtr(dst), argPtr(stage), argInt(n)); err != nil {
			return err
		}
		// The next chunk reuses wide and stage: let this one finish.
		return e.g.sync()
	})
	return m, err
}

// allocWeights allocates device memory that Close frees (inside do).
func (e *engine) allocWeights(bytes int64) (uint64, error) {
	p, err := e.g.alloc(bytes)
	if err != nil {
		return 0, err
	}
	e.allocs = append(e.allocs, p)
	e.weights += bytes
	return p, nil
}

// Info describes the model; CacheBytesPerToken counts fp16 caches.
func (e *engine) Info() swarm.ModelInfo { return e.info }

// Span is the blocks whose weights are on the device.
func (e *engine) Span() swarm.Span { return e.span }

// WeightBytes is the device memory the span's weights take, bytes: s_m *
// m_j of the memory model (paper 003 eq. 2) as this engine holds them,
// fp16, which for a quantized file is more than its stored bytes
// (StoredWeightBytes).
func (e *engine) WeightBytes() int64 { return e.weights }

// StoredWeightBytes is the span's weight bytes as stored in the file.
func (e *engine) StoredWeightBytes() int64 { return e.stored }

// Close frees the weights, the scratch and the caches of sessions still
// open, which then fail with blocks.ErrClosed.
func (e *engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.prof != nil {
		e.prof.write(os.Stderr, fmt.Sprintf("blocks %s", e.span))
	}
	for s := range e.open {
		s.free()
	}
	e.open = nil
	e.release()
	return nil
}

// release frees every device allocation of the engine.
func (e *engine) release() {
	_ = e.g.do(func() error {
		_ = e.g.sync()
		for _, p := range e.allocs {
			e.g.free(p)
		}
		e.freeScratch()
		return nil
	})
	e.allocs = nil
}

// freeScratch frees the scratch buffers (inside do).
func (e *engine) freeScratch() {
	s := &e.sc
	for _, p := range []uint64{s.in, s.xb2, s.xh, s.q, s.k, s.v, s.att, s.hb, s.up, s.hbh, s.scores} {
		e.g.free(p)
	}
	e.sc = scratch{}
}

// growScratch sizes the scratch for rows tokens attending to at most ctx
// positions (inside do).
func (e *engine) growScratch(rows, ctx int) error {
	if rows <= e.sc.rows && ctx <= e.sc.ctx {
		return nil
	}
	// Size for a whole chunk and for twice the positions asked (at least
	// 256), so that decode steps, one position longer each, reallocate
	// only when their length doubles.
	rows = max(rows, e.sc.rows, maxChunk)
	rows = (rows + gemmCols - 1) / gemmCols * gemmCols
	ctx = max(ctx, 2*e.sc.ctx, 256)
	if e.info.MaxSeqLen > 0 {
		ctx = min(ctx, max(e.info.MaxSeqLen, 1))
	}
	ctx = max(ctx, 1)
	_ = e.g.sync()
	e.freeScratch()
	info := &e.info
	qDim, kvDim, half := info.NHeads*info.HeadDim, info.NKVHeads*info.HeadDim, info.HeadDim/2
	s := scratch{rows: rows, ctx: ctx}
	for _, a := range []struct {
		p     *uint64
		bytes int
	}{
		{&s.in, 4 * rows * (info.DModel + 4*half)}, {&s.xb2, 4 * rows * info.DModel},
		{&s.xh, 2 * rows * max(info.DModel, qDim)},
		{&s.q, 4 * rows * qDim}, {&s.k, 4 * rows * kvDim}, {&s.v, 4 * rows * kvDim}, {&s.att, 4 * rows * qDim},
		{&s.hb, 4 * rows * info.FFNDim}, {&s.up, 4 * rows * info.FFNDim}, {&s.hbh, 2 * rows * info.FFNDim},
		{&s.scores, 4 * rows * info.NHeads * ctx},
	} {
		p, err := e.g.alloc(int64(a.bytes))
		if err == nil {
			// Zeros: the padding rows of a pass's matrix products
			// (gemmCols) are read before anything writes them.
			err = e.g.d.check("cuMemsetD8Async", e.g.d.cuMemsetD8Async(p, 0, uint64(a.bytes), e.g.stream))
		}
		if err != nil {
			e.g.free(p)
			e.sc = s
			e.freeScratch()
			return err
		}
		*a.p = p
	}
	e.sc = s
	return nil
}

// stageFor returns the upload stage resized to n floats (inside do).
func (e *engine) stageFor(n int) []float32 {
	if cap(e.stage) < n {
		e.stage = make([]float32, n)
	}
	return e.stage[:n]
}

// errClosed is the error of a call after Close.
func (e *engine) errClosed() error {
	return fmt.Errorf("%w: CUDA engine for span %s", blocks.ErrClosed, e.span)
}
