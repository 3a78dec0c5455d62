package cuda

import (
	"fmt"
	"time"

	"github.com/swarmllm/swarm/blocks"
)

// seg is one session's rows in a pass: n tokens at positions pos.., rows
// off..off+n-1 of the pass.
type seg struct {
	s           *session
	pos, n, off int
}

// segTable is kernels.cu's sw_segs (store_kv, 4), passed by value to
// store_kv and attention: the sessions of a pass, their rows and caches of
// one block. The field order and sizes match the C struct's, whose size is
// 2*8*maxSegs + 4*4*maxSegs + 4 bytes, padded to 8.
type segTable struct {
	kc, vc            [maxSegs]uint64 // device pointers of each session's half caches
	pos, off, n, ring [maxSegs]int32  // first position, first pass row, rows, ring rows (0: full cache)
	count             int32
	_                 int32
}

// maxSegs is SW_MAX_SEGS: the most sessions a pass holds (a pass has at
// most maxChunk rows, one or more a session).
const maxSegs = 64

var _ [maxSegs - maxChunk]struct{} // a pass of maxChunk one-row sessions fits

var _ [64 - maxChunk]struct{} // mma_64 takes a pass of maxChunk tokens

// mvOut is one matrix of a matvec launch and its float32 output [n, rows]
// (0 in mode mvGLU).
type mvOut struct {
	m devMat
	o uint64
}

// mvLaunch is the launch of a matvec over the pass's n tokens: the kernel
// (the column tile: 1, 4 or 16 tokens), its grid and block size. rows are
// the stacked matrices' rows in modes mvStore and mvAdd, the gate's in
// mvGLU; a warp takes 2 of them (one gate and up pair in mvGLU). Passes of
// more than 4 tokens use blocks of 8 warps, which share each load of x (16
// rows a load; measured on an H200 at 16 tokens, 0.78-0.80 ms per 7B-shaped
// block against 0.79-0.81 with 4 warps). The kernels sum a token's products
// in one order whatever the launch, so this choice never changes a result.
func mvLaunch(n, mode, rows int) (k kernel, grid, block uint32) {
	warps := 4
	switch {
	case n == 1:
		k = kMatvec1
	case n <= 4:
		k = kMatvec4
	default:
		k, warps = kMatvec16, 8
	}
	units := (rows + 1) / 2
	if mode == mvGLU {
		units = rows
	}
	return k, uint32((units + warps - 1) / warps), uint32(32 * warps)
}

// mmaLaunch is the launch of a tensor-core product (kernels.cu, 11) over
// the pass's n tokens (at most maxChunk): the kernel by the tiles of 8
// tokens it needs, one block of 8 warps a unit of 16 rows (mvStore,
// mvAdd: rows are the stacked matrices') or of 8 gate and up rows (mvGLU:
// rows are the gate's).
func mmaLaunch(n, mode, rows int) (k kernel, grid, block uint32) {
	switch {
	case n <= 8:
		k = kMMA8
	case n <= 16:
		k = kMMA16
	default:
		k = kMMA64
	}
	units := (rows + 15) / 16
	if mode == mvGLU {
		units = (rows + 7) / 8
	}
	return k, uint32(units), 256
}

// The modes of the matvec kernels (kernels.cu, 10).
const (
	mvStore = 0 // out = W · x, up to three matrices stacked
	mvAdd   = 1 // out += W · x (the residual)
	mvGLU   = 2 // outh = f16(act(W1 · x) * (W3 · x))
)

// gemmCols is the width of every matrix product's column tile: cuBLAS is
// always asked for [rows, gemmCols] outputs, the rows of a pass padded
// with zeros to a multiple of it, so that a token's products are computed
// by the same cuBLAS algorithm whether it comes alone, in a prefill or in
// a batch (cuBLAS picks its algorithm by shape). On a GPU a decode step
// is bound by reading the weights, so the padding costs little there.
const gemmCols = 16

// forward runs the rows of segs, in [rows, DModel] with rows the segs'
// tokens (at most maxChunk), through the blocks of their sessions (all of
// one sub-span) and writes out [rows, DModel] (inside do, under e.mu). A
// row's result depends only on its own values and its own session's
// caches. Per block, as the CPU engine's forwardBlock (blocks/block.go):
//
//	xb = RMSNorm(x); q, k, v = Wq·xb (+bq), Wk·xb (+bk), Wv·xb (+bv)
//	q, k = RoPE(qn(q)), RoPE(kn(k)); caches += k, v
//	x += post(Wo · attention(q, caches))
//	x += post(W2 · (act(W1·RMSNorm(x)) * (W3·RMSNorm(x))))
//
// Matrix products take fp16 inputs and sum in float32, on the mma or
// matvec kernels (Q, K and V in one launch, W1 and W3 with the activation
// in one, Wo and W2 adding into x when there is no post-norm) or, with
// SWARM_CUDA_GEMM=cublas, on cuBLAS; the rest are the kernels of
// kernels.cu in float32, the cache stores and attention one launch each for
// all the pass's sessions.
func (e *engine) forward(segs []seg, in, out []float32) error {
	info := &e.info
	d, hd, nh, nkv := info.DModel, info.HeadDim, info.NHeads, info.NKVHeads
	qDim, kvDim, half, ffn := nh*hd, nkv*hd, hd/2, info.FFNDim
	eps := float32(info.NormEps)
	g := e.g
	n, ctxMax := 0, 0
	for _, sg := range segs {
		n += sg.n
		ctxMax = max(ctxMax, sg.pos+sg.n)
	}
	if n > maxChunk || len(segs) > maxSegs {
		// ForwardBatch and session.run never pass more; the kernels' tables
		// and tiles are sized for it.
		return fmt.Errorf("cuda: a pass of %d rows in %d sessions, at most %d rows", n, len(segs), maxChunk)
	}
	prof, bk := e.prof, bucket(n)
	start := time.Now()
	if err := e.growScratch(n, ctxMax); err != nil {
		return err
	}
	if prof != nil {
		prof.add(bk+" grow scratch", time.Since(start))
	}
	sc := &e.sc
	sub := segs[0].s.sub

	// One upload per pass: the RoPE angles of every row's position (the
	// sliding blocks' own when they rotate with another base) and the
	// hidden states, packed as [cos | sin | cosL | sinL | x] (n*half
	// floats each, then n*DModel) in the stage and in sc.in.
	nh4 := n * half
	stage := e.stageFor(4*nh4 + n*d)
	cos, sin, cosL, sinL := stage[:nh4], stage[nh4:2*nh4], stage[2*nh4:3*nh4], stage[3*nh4:4*nh4]
	for _, sg := range segs {
		for t := range sg.n {
			r := (sg.off + t) * half
			e.rope.Angles(sg.pos+t, false, cos[r:r+half], sin[r:r+half])
			e.rope.Angles(sg.pos+t, true, cosL[r:r+half], sinL[r:r+half])
		}
	}
	copy(stage[4*nh4:], in)
	pCos, pSin, pCosL, pSinL := sc.in, offF32(sc.in, nh4), offF32(sc.in, 2*nh4), offF32(sc.in, 3*nh4)
	x := offF32(sc.in, 4*nh4) // the residual stream [n, DModel]; 16-byte aligned
	var err error
	// run queues the operations in order and keeps the first error; with
	// SWARM_CUDA_PROFILE=ops it also waits for each and times it under
	// its label (a func: the string is built only then).
	run := func(label func() string, f func() error) {
		if err != nil {
			return
		}
		if prof == nil || !prof.ops {
			err = f()
			return
		}
		t := time.Now()
		if err = f(); err == nil {
			err = g.sync()
		}
		prof.add(bk+" "+label(), time.Since(t))
	}
	run(func() string { return "upload" }, func() error { return g.uploadF32(sc.in, stage) })
	norm := func(o, oh, x, w uint64, rows, cols int) {
		run(func() string { return "rmsnorm" }, func() error {
			return g.launch(kRMSNorm, uint32(rows), 256, argPtr(o), argPtr(oh), argPtr(x), argPtr(w), argInt(cols), argF32(eps))
		})
	}
	gemm := func(o uint64, m devMat, x uint64) {
		for c := 0; c < n; c += gemmCols {
			run(func() string { return fmt.Sprintf("gemm %dx%d", m.rows, m.cols) }, func() error {
				return g.blas.gemm(g.handle, o+4*uint64(c*m.rows), m.p, x+2*uint64(c*m.cols), m.rows, m.cols, gemmCols)
			})
		}
	}
	// mv runs the matvec kernel (kernels.cu) on the pass's n tokens of x
	// (half, [n, cols]) against up to three matrices of one width.
	mv := func(mode int, x uint64, outh uint64, mats ...mvOut) {
		var a [3]mvOut
		copy(a[:], mats)
		rows, units := 0, 0 // all the matrices' rows; the rows a launch covers
		for _, m := range mats {
			rows += m.m.rows
		}
		if units = rows; mode == mvGLU {
			units = mats[0].m.rows
		}
		k, grid, block := mvLaunch(n, mode, units)
		if e.mma && mats[0].m.cols%8 == 0 {
			k, grid, block = mmaLaunch(n, mode, units)
		}
		run(func() string { return fmt.Sprintf("%s mode %d %dx%d", kernelNames[k], mode, rows, mats[0].m.cols) }, func() error {
			return g.launch(k, grid, block, argPtr(x), argInt(mats[0].m.cols), argInt(n),
				argPtr(a[0].m.p), argPtr(a[0].o), argInt(a[0].m.rows), argPtr(a[1].m.p), argPtr(a[1].o), argInt(a[1].m.rows),
				argPtr(a[2].m.p), argPtr(a[2].o), argInt(a[2].m.rows), argInt(mode), argPtr(outh), argInt(e.act))
		})
	}
	ew := func(k kernel, total int, args ...uint64) {
		run(func() string { return kernelNames[k] }, func() error { return g.launch(k, gridFor(total), 256, args...) })
	}
	residual := func(post uint64) {
		if post != 0 {
			norm(sc.xb2, 0, sc.xb2, post, n, d)
		}
		ew(kAdd, n*d, argPtr(x), argPtr(sc.xb2), argInt(n*d))
	}

	for b := sub.Start; b < sub.End; b++ {
		l := e.layers[b-e.span.Start]
		m, v := &l.mats, &l.vecs

		// Attention.
		norm(0, sc.xh, x, v[blocks.SlotAttnNorm], n, d)
		if e.cublas {
			gemm(sc.q, m[blocks.SlotWQ], sc.xh)
			gemm(sc.k, m[blocks.SlotWK], sc.xh)
			gemm(sc.v, m[blocks.SlotWV], sc.xh)
		} else {
			mv(mvStore, sc.xh, 0, mvOut{m[blocks.SlotWQ], sc.q}, mvOut{m[blocks.SlotWK], sc.k}, mvOut{m[blocks.SlotWV], sc.v})
		}
		if v[blocks.SlotBQ] != 0 {
			ew(kAddBias, n*qDim, argPtr(sc.q), argPtr(v[blocks.SlotBQ]), argInt(qDim), argInt(n*qDim))
			ew(kAddBias, n*kvDim, argPtr(sc.k), argPtr(v[blocks.SlotBK]), argInt(kvDim), argInt(n*kvDim))
			ew(kAddBias, n*kvDim, argPtr(sc.v), argPtr(v[blocks.SlotBV]), argInt(kvDim), argInt(n*kvDim))
		}
		if v[blocks.SlotQNorm] != 0 {
			norm(sc.q, 0, sc.q, v[blocks.SlotQNorm], n*nh, hd)
			norm(sc.k, 0, sc.k, v[blocks.SlotKNorm], n*nkv, hd)
		}
		cp, sp := pCos, pSin
		if l.sliding {
			cp, sp = pCosL, pSinL
		}
		ew(kRoPE, n*nh*half, argPtr(sc.q), argPtr(cp), argPtr(sp), argInt(nh), argInt(hd), argInt(n))
		ew(kRoPE, n*nkv*half, argPtr(sc.k), argPtr(cp), argPtr(sp), argInt(nkv), argInt(hd), argInt(n))
		window := 0
		if l.sliding {
			window = info.SlidingWindow
		}
		// Every session's keys and values into its caches, then attention
		// over them: one launch each for all the pass's sessions.
		var st segTable
		st.count = int32(len(segs))
		for i, sg := range segs {
			c := sg.s.caches[b-sub.Start]
			st.kc[i], st.vc[i] = c.k, c.v
			st.pos[i], st.off[i], st.n[i] = int32(sg.pos), int32(sg.off), int32(sg.n)
			if c.ring {
				st.ring[i] = int32(c.rows)
			}
		}
		run(func() string { return kernelNames[kStoreKV] }, func() error {
			return g.launchSegs(kStoreKV, gridFor(n*kvDim), 256, &st, argPtr(sc.k), argPtr(sc.v), argInt(kvDim), argInt(n))
		})
		run(func() string { return "attention" }, func() error {
			return g.launchSegs(kAttention, uint32(n*nh), 256, &st, argPtr(sc.att), argPtr(sc.q), argPtr(sc.scores),
				argInt(nh), argInt(nkv), argInt(hd), argInt(n), argInt(window), argF32(e.attnScale), argInt(sc.ctx),
				argPtr(sc.xh))
		})
		// out = W · in, then the residual: x += post(out); without a
		// post-norm the matvec adds into x itself (the same float sums).
		project := func(w devMat, in uint64, post uint64) {
			if e.cublas {
				gemm(sc.xb2, w, in)
				residual(post)
				return
			}
			if post != 0 {
				mv(mvStore, in, 0, mvOut{w, sc.xb2})
				residual(post)
				return
			}
			mv(mvAdd, in, 0, mvOut{w, x})
		}
		project(m[blocks.SlotWO], sc.xh, v[blocks.SlotPostAttnNorm])

		// Feed-forward.
		norm(0, sc.xh, x, v[blocks.SlotFFNNorm], n, d)
		if e.cublas {
			gemm(sc.hb, m[blocks.SlotW1], sc.xh)
			gemm(sc.up, m[blocks.SlotW3], sc.xh)
			ew(kGLU, n*ffn, argPtr(sc.hbh), argPtr(sc.hb), argPtr(sc.up), argInt(n*ffn), argInt(e.act))
		} else {
			mv(mvGLU, sc.xh, sc.hbh, mvOut{m[blocks.SlotW1], 0}, mvOut{m[blocks.SlotW3], 0})
		}
		project(m[blocks.SlotW2], sc.hbh, v[blocks.SlotPostFFNNorm])
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	queued := time.Now()
	err = g.downloadF32(out, x)
	if prof != nil && !prof.ops {
		prof.add(bk+" queue (host)", queued.Sub(start))
		prof.add(bk+" wait for device", time.Since(queued))
	} else if prof != nil {
		prof.add(bk+" download", time.Since(queued))
	}
	return err
}
