package cuda

import "github.com/swarmllm/swarm/blocks"

// seg is one session's rows in a pass: n tokens at positions pos.., rows
// off..off+n-1 of the pass.
type seg struct {
	s           *session
	pos, n, off int
}

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
// Matrix products run on cuBLAS with fp16 inputs and float32 sums; the
// rest are the kernels of kernels.cu in float32.
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
	if err := e.growScratch(n, ctxMax); err != nil {
		return err
	}
	sc := &e.sc
	sub := segs[0].s.sub

	// RoPE angles of every row's position (the sliding blocks' own when
	// they rotate with another base).
	cos, sin := make([]float32, n*half), make([]float32, n*half)
	cosL, sinL := make([]float32, n*half), make([]float32, n*half)
	for _, sg := range segs {
		for t := range sg.n {
			r := (sg.off + t) * half
			e.rope.Angles(sg.pos+t, false, cos[r:r+half], sin[r:r+half])
			e.rope.Angles(sg.pos+t, true, cosL[r:r+half], sinL[r:r+half])
		}
	}
	for _, u := range []struct {
		p uint64
		x []float32
	}{{sc.x, in}, {sc.cos, cos}, {sc.sin, sin}, {sc.cosL, cosL}, {sc.sinL, sinL}} {
		if err := g.uploadF32(u.p, u.x); err != nil {
			return err
		}
	}

	var err error
	// run queues the operations in order and keeps the first error.
	run := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	norm := func(o, oh, x, w uint64, rows, cols int) {
		run(func() error {
			return g.launch(kRMSNorm, uint32(rows), 256, argPtr(o), argPtr(oh), argPtr(x), argPtr(w), argInt(cols), argF32(eps))
		})
	}
	gemm := func(o uint64, m devMat, x uint64) {
		for c := 0; c < n; c += gemmCols {
			run(func() error {
				return g.blas.gemm(g.handle, o+4*uint64(c*m.rows), m.p, x+2*uint64(c*m.cols), m.rows, m.cols, gemmCols)
			})
		}
	}
	ew := func(k kernel, total int, args ...uint64) {
		run(func() error { return g.launch(k, gridFor(total), 256, args...) })
	}
	residual := func(post uint64) {
		if post != 0 {
			norm(sc.xb2, 0, sc.xb2, post, n, d)
		}
		ew(kAdd, n*d, argPtr(sc.x), argPtr(sc.xb2), argInt(n*d))
	}

	for b := sub.Start; b < sub.End; b++ {
		l := e.layers[b-e.span.Start]
		m, v := &l.mats, &l.vecs

		// Attention.
		norm(0, sc.xh, sc.x, v[blocks.SlotAttnNorm], n, d)
		gemm(sc.q, m[blocks.SlotWQ], sc.xh)
		gemm(sc.k, m[blocks.SlotWK], sc.xh)
		gemm(sc.v, m[blocks.SlotWV], sc.xh)
		if v[blocks.SlotBQ] != 0 {
			ew(kAddBias, n*qDim, argPtr(sc.q), argPtr(v[blocks.SlotBQ]), argInt(qDim), argInt(n*qDim))
			ew(kAddBias, n*kvDim, argPtr(sc.k), argPtr(v[blocks.SlotBK]), argInt(kvDim), argInt(n*kvDim))
			ew(kAddBias, n*kvDim, argPtr(sc.v), argPtr(v[blocks.SlotBV]), argInt(kvDim), argInt(n*kvDim))
		}
		if v[blocks.SlotQNorm] != 0 {
			norm(sc.q, 0, sc.q, v[blocks.SlotQNorm], n*nh, hd)
			norm(sc.k, 0, sc.k, v[blocks.SlotKNorm], n*nkv, hd)
		}
		cp, sp := sc.cos, sc.sin
		if l.sliding {
			cp, sp = sc.cosL, sc.sinL
		}
		ew(kRoPE, n*nh*half, argPtr(sc.q), argPtr(cp), argPtr(sp), argInt(nh), argInt(hd), argInt(n))
		ew(kRoPE, n*nkv*half, argPtr(sc.k), argPtr(cp), argPtr(sp), argInt(nkv), argInt(hd), argInt(n))
		window := 0
		if l.sliding {
			window = info.SlidingWindow
		}
		for _, sg := range segs {
			c := sg.s.caches[b-sub.Start]
			ring := 0
			if c.ring {
				ring = c.rows
			}
			ew(kStoreKV, sg.n*kvDim, argPtr(c.k), argPtr(c.v), argPtr(offF32(sc.k, sg.off*kvDim)), argPtr(offF32(sc.v, sg.off*kvDim)),
				argInt(kvDim), argInt(sg.pos), argInt(ring), argInt(sg.n))
			run(func() error {
				return g.launch(kAttention, uint32(sg.n*nh), 128, argPtr(offF32(sc.att, sg.off*qDim)), argPtr(offF32(sc.q, sg.off*qDim)),
					argPtr(c.k), argPtr(c.v), argPtr(sc.scores),
					argInt(nh), argInt(nkv), argInt(hd), argInt(sg.pos), argInt(sg.n), argInt(window), argInt(ring), argF32(e.attnScale), argInt(sc.ctx))
			})
		}
		ew(kToF16, n*qDim, argPtr(sc.xh), argPtr(sc.att), argInt(n*qDim))
		gemm(sc.xb2, m[blocks.SlotWO], sc.xh)
		residual(v[blocks.SlotPostAttnNorm])

		// Feed-forward.
		norm(0, sc.xh, sc.x, v[blocks.SlotFFNNorm], n, d)
		gemm(sc.hb, m[blocks.SlotW1], sc.xh)
		gemm(sc.up, m[blocks.SlotW3], sc.xh)
		ew(kGLU, n*ffn, argPtr(sc.hbh), argPtr(sc.hb), argPtr(sc.up), argInt(n*ffn), argInt(e.act))
		gemm(sc.xb2, m[blocks.SlotW2], sc.hbh)
		residual(v[blocks.SlotPostFFNNorm])
		if err != nil {
			return err
		}
	}
	return g.downloadF32(out, sc.x)
}
