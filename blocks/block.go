package blocks

import (
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// layer is the weights of one transformer block: pre-norm attention and a
// gated feed-forward, each with a residual connection (Llama), plus the
// optional tensors some architectures add (nil when absent): q/k/v biases
// (Qwen2), per-head q/k RMSNorm (Qwen3, Gemma 3), and RMSNorms of the
// attention and feed-forward outputs before their residual adds (Gemma 3).
// q/k rows, biases and norms are in adjacent-pair RoPE order.
type layer struct {
	attnNorm     []float32 // [DModel] RMSNorm weight before attention
	wq           *matrix   // [NHeads*HeadDim, DModel]
	wk           *matrix   // [NKVHeads*HeadDim, DModel]
	wv           *matrix   // [NKVHeads*HeadDim, DModel]
	wo           *matrix   // [DModel, NHeads*HeadDim]
	bq, bk, bv   []float32 // [NHeads*HeadDim], [NKVHeads*HeadDim] x2, or nil
	qNorm, kNorm []float32 // [HeadDim] per-head RMSNorm weights, or nil
	postAttnNorm []float32 // [DModel] RMSNorm of the attention output, or nil
	ffnNorm      []float32 // [DModel] RMSNorm weight before the feed-forward
	w1           *matrix   // gate [FFNDim, DModel]
	w2           *matrix   // down [DModel, FFNDim]
	w3           *matrix   // up [FFNDim, DModel]
	postFFNNorm  []float32 // [DModel] RMSNorm of the feed-forward output, or nil
	// sliding marks a sliding-window block (ModelInfo.IsSliding): it
	// attends to the last SlidingWindow positions only, with the engine's
	// local RoPE.
	sliding bool
	// stored is the block's weight bytes as stored in the model file, s_m
	// (paper 003 eq. 2); 0 means "as held in memory" (norms as float32).
	stored int64
}

// matrices maps the matrix slots to the layer's fields (nil elsewhere).
func (l *layer) matrices() [NumSlots]**matrix {
	return [NumSlots]**matrix{SlotWQ: &l.wq, SlotWK: &l.wk, SlotWV: &l.wv, SlotWO: &l.wo, SlotW1: &l.w1, SlotW2: &l.w2, SlotW3: &l.w3}
}

// vectors maps the vector slots to the layer's fields (nil elsewhere).
func (l *layer) vectors() [NumSlots]*[]float32 {
	return [NumSlots]*[]float32{
		SlotAttnNorm: &l.attnNorm, SlotBQ: &l.bq, SlotBK: &l.bk, SlotBV: &l.bv, SlotQNorm: &l.qNorm, SlotKNorm: &l.kNorm,
		SlotPostAttnNorm: &l.postAttnNorm, SlotFFNNorm: &l.ffnNorm, SlotPostFFNNorm: &l.postFFNNorm,
	}
}

// bytes is the block's weight bytes: as stored in the file when known,
// else as held in memory.
func (l *layer) bytes() int64 {
	if l.stored > 0 {
		return l.stored
	}
	var n int64
	for _, v := range l.vectors() {
		if v != nil {
			n += 4 * int64(len(*v))
		}
	}
	for _, m := range l.matrices() {
		if m != nil && *m != nil {
			n += (*m).bytes()
		}
	}
	return n
}

// scratch is a session's working memory for a Forward call of n tokens.
type scratch struct {
	n int
	// shape is the model shape the slices were sized for: the pools that
	// recycle scratches are shared by every engine in the process.
	shape    scratchShape
	xb, xb2  []float32 // [n, DModel]
	q, att   []float32 // [n, NHeads*HeadDim]
	k, v     []float32 // [n, NKVHeads*HeadDim]
	hb, up   []float32 // [n, FFNDim]
	cos, sin []float32 // [n, HeadDim/2]
	// cosL, sinL are the angles of the local RoPE of sliding blocks
	// [n, HeadDim/2], filled only when it differs (cpuEngine.local).
	cosL, sinL []float32
}

// scratchShape is what a scratch's sizes depend on besides its rows.
type scratchShape struct{ dModel, nHeads, nKVHeads, headDim, ffnDim int }

// grow makes s hold at least n rows of a model shaped as info. A scratch
// last sized for another shape (another engine's, through a shared pool)
// is sized anew even when it has rows enough.
func (s *scratch) grow(info swarm.ModelInfo, n int) {
	shape := scratchShape{info.DModel, info.NHeads, info.NKVHeads, info.HeadDim, info.FFNDim}
	if n <= s.n && shape == s.shape {
		return
	}
	qDim, kvDim := info.NHeads*info.HeadDim, info.NKVHeads*info.HeadDim
	s.n, s.shape = n, shape
	s.xb = make([]float32, n*info.DModel)
	s.xb2 = make([]float32, n*info.DModel)
	s.q = make([]float32, n*qDim)
	s.att = make([]float32, n*qDim)
	s.k = make([]float32, n*kvDim)
	s.v = make([]float32, n*kvDim)
	s.hb = make([]float32, n*info.FFNDim)
	s.up = make([]float32, n*info.FFNDim)
	s.cos = make([]float32, n*info.HeadDim/2)
	s.sin = make([]float32, n*info.HeadDim/2)
	s.cosL = make([]float32, n*info.HeadDim/2)
	s.sinL = make([]float32, n*info.HeadDim/2)
}

// seg is one session's run of rows in a batch: n tokens at positions
// pos..pos+n-1 over cache c, starting at row off of the batch.
type seg struct {
	c      *kvCache
	off, n int
	pos    int
}

// forwardBlock runs hidden states x [n, DModel] through one block in place.
// The rows belong to the sessions in segs (each appends its tokens to its own
// cache, which must already hold positions 0..pos-1); s.cos/s.sin (and
// s.cosL/s.sinL for a sliding block with its own RoPE) hold the RoPE angles
// of every row. The matrix products span all rows at once (one pass over
// the weights for the whole batch); a row's result depends only on that row
// and its own session's cache, never on the other rows, so a session's
// output is bit for bit the same alone or in any batch.
func (e *cpuEngine) forwardBlock(l *layer, segs []seg, s *scratch, x []float32, n int) {
	info := &e.info
	d, hd := info.DModel, info.HeadDim
	qDim, kvDim := info.NHeads*hd, info.NKVHeads*hd
	eps := float32(info.NormEps)

	// Attention: x += post(Wo · attention(RoPE(qn(Wq·xb+bq)), RoPE(kn(Wk·xb+bk)), Wv·xb+bv)),
	// xb = RMSNorm(x); the biases, q/k norms qn, kn and post norm are
	// present in some architectures only.
	for t := range n {
		rmsnorm(s.xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.attnNorm, eps)
	}
	mulMats([][]float32{s.q, s.k, s.v}, []*matrix{l.wq, l.wk, l.wv}, s.xb, n)
	if l.bq != nil {
		addRows(s.q, l.bq, n)
		addRows(s.k, l.bk, n)
		addRows(s.v, l.bv, n)
	}
	if l.qNorm != nil {
		for h := range n * info.NHeads {
			rmsnorm(s.q[h*hd:(h+1)*hd], s.q[h*hd:(h+1)*hd], l.qNorm, eps)
		}
		for h := range n * info.NKVHeads {
			rmsnorm(s.k[h*hd:(h+1)*hd], s.k[h*hd:(h+1)*hd], l.kNorm, eps)
		}
	}
	half := hd / 2
	cosT, sinT := s.cos, s.sin
	if l.sliding && e.local != nil {
		cosT, sinT = s.cosL, s.sinL
	}
	for t := range n {
		cos, sin := cosT[t*half:(t+1)*half], sinT[t*half:(t+1)*half]
		e.rope.apply(s.q[t*qDim:(t+1)*qDim], info.NHeads, cos, sin)
		e.rope.apply(s.k[t*kvDim:(t+1)*kvDim], info.NKVHeads, cos, sin)
	}
	if e.cacheF16 {
		roundF16(s.k[:n*kvDim])
		roundF16(s.v[:n*kvDim])
	}
	for _, g := range segs {
		if g.c.ring == 0 {
			g.c.putRows(g.pos, s.k[g.off*kvDim:(g.off+g.n)*kvDim], s.v[g.off*kvDim:(g.off+g.n)*kvDim])
		}
	}
	window := 0
	if l.sliding {
		window = info.SlidingWindow
	}
	e.attention(s.att, s.q, s.k, s.v, segs, n, window)
	for _, g := range segs {
		if g.c.ring > 0 {
			g.c.store(s.k, s.v, g, kvDim)
		}
	}
	mulMats([][]float32{s.xb2}, []*matrix{l.wo}, s.att, n)
	e.residual(x, s.xb2, l.postAttnNorm, n)

	// Feed-forward: x += post(W2 · (act(W1·xb) * (W3·xb))), xb = RMSNorm(x).
	for t := range n {
		rmsnorm(s.xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.ffnNorm, eps)
	}
	mulGLU(s.hb, s.up, l.w1, l.w3, s.xb, n, e.params.act)
	mulMats([][]float32{s.xb2}, []*matrix{l.w2}, s.hb, n)
	e.residual(x, s.xb2, l.postFFNNorm, n)
}

// residual adds y [n, DModel] to x, after RMSNorm with weight post when
// post is not nil (Gemma 3's post-attention and post-feed-forward norms;
// y is normalized in place).
func (e *cpuEngine) residual(x, y, post []float32, n int) {
	d := e.info.DModel
	if post != nil {
		for t := range n {
			rmsnorm(y[t*d:(t+1)*d], y[t*d:(t+1)*d], post, float32(e.info.NormEps))
		}
	}
	for i := range n * d {
		x[i] += y[i]
	}
}

// addRows adds bias b [cols] to each of the n rows of x [n, cols].
func addRows(x, b []float32, n int) {
	c := len(b)
	for t := range n {
		row := x[t*c : (t+1)*c]
		for i, v := range b {
			row[i] += v
		}
	}
}

// attention computes causal grouped-query attention for the n query rows q
// [n, NHeads*HeadDim] of segs, each at its session's positions over its own
// cache, writing att [n, NHeads*HeadDim]. Query head h reads KV head
// h/(NHeads/NKVHeads). Scores are q·k/attnScale (sqrt(HeadDim) unless the
// architecture says otherwise), softmax over positions 0..p (Vaswani et al.
// 2017, eq. 1), or over p-window+1..p when window > 0 (sliding-window
// attention, Beltagy et al. 2020). A full cache already holds the segs'
// own positions; a ring cache (kvCache.ring) gives the positions before
// the seg's first, and k, v [n, NKVHeads*HeadDim] (this call's keys and
// values) the seg's own: the same numbers in the same order either way.
func (e *cpuEngine) attention(att, q, k, v []float32, segs []seg, n, window int) {
	info := &e.info
	hd, nh := info.HeadDim, info.NHeads
	qDim, kvDim := nh*hd, info.NKVHeads*hd
	group := nh / info.NKVHeads
	sq := float32(e.params.attnScale)
	// row[t] is the segment of row t.
	row := make([]int32, n)
	longest := 0
	for i, g := range segs {
		for t := g.off; t < g.off+g.n; t++ {
			row[t] = int32(i)
		}
		longest = max(longest, g.pos+g.n)
	}
	parallelFor(n*nh, 2*longest*hd, func(lo, hi int) {
		scores := make([]float32, longest)
		buf := make([]float32, hd)
		for th := lo; th < hi; th++ {
			t, h := th/nh, th%nh
			g := &segs[row[t]]
			c := g.c
			p := g.pos + t - g.off
			qh := q[t*qDim+h*hd : t*qDim+(h+1)*hd]
			off := (h / group) * hd
			lo := 0
			if window > 0 {
				lo = max(0, p-window+1)
			}
			sc := scores[:p+1-lo]
			oh := att[t*qDim+h*hd : t*qDim+(h+1)*hd]
			if c.ring > 0 {
				ringAttention(oh, qh, sc, c, k, v, g, lo, off, kvDim, sq, buf)
				continue
			}
			keyScores(sc, qh, c, lo, off, hd, sq, buf)
			softmax(sc)
			clear(oh)
			for j, a := range sc {
				axpy(a, c.vHead(lo+j, off, hd, buf), oh)
			}
		}
	})
}

// keyScores sets sc[j] = dotF32(qh, key head of row lo+j) / sq: with an f32
// cache, one dotF32Rows call per page of keys (the same bits as a
// dotF32 per row); with an f16 cache, row by row through buf.
func keyScores(sc, qh []float32, c *kvCache, lo, off, hd int, sq float32, buf []float32) {
	if c.f16 {
		for j := range sc {
			sc[j] = dotF32(qh, c.kHead(lo+j, off, hd, buf)) / sq
		}
		return
	}
	for j := 0; j < len(sc); {
		r := lo + j
		in := r & (cachePageRows - 1)
		n := min(len(sc)-j, cachePageRows-in)
		dotF32Rows(c.k[r>>cachePageShift][in*c.kvDim+off:], c.kvDim, qh, sc[j:j+n])
		j += n
	}
	for j := range sc {
		sc[j] /= sq
	}
}

// ringAttention is one query head's attention over positions
// lo..lo+len(sc)-1 when g's cache is a ring. qh, oh [HeadDim] are the
// query and output head, off the KV head's offset in a row of kvDim, sc
// the scores' room, k and v this call's keys and values (see ringKV), buf
// [HeadDim] room to widen an f16 cache's head into.
func ringAttention(oh, qh, sc []float32, c *kvCache, k, v []float32, g *seg, lo, off, kvDim int, sq float32, buf []float32) {
	hd := len(qh)
	for j := range sc {
		kp := ringKV(c, false, k, g, lo+j, off, kvDim, hd, buf)
		sc[j] = dotF32(qh, kp) / sq
	}
	softmax(sc)
	clear(oh)
	for j, a := range sc {
		axpy(a, ringKV(c, true, v, g, lo+j, off, kvDim, hd, buf), oh)
	}
}

// ringKV returns the key (or value) head [HeadDim] at offset off of
// position p for seg g over ring cache c: positions before g.pos from row
// p % ring of the cache (values when isV, else keys; widened into buf for
// an f16 cache), the seg's own from row g.off + p - g.pos of this call's x
// (k or v).
func ringKV(c *kvCache, isV bool, x []float32, g *seg, p, off, kvDim, hd int, buf []float32) []float32 {
	if p < g.pos {
		if isV {
			return c.vHead(p%c.ring, off, hd, buf)
		}
		return c.kHead(p%c.ring, off, hd, buf)
	}
	r := (g.off+p-g.pos)*kvDim + off
	return x[r : r+hd]
}

// rmsnorm writes o = w * x / sqrt(mean(x^2) + eps) (Zhang & Sennrich 2019,
// eq. 4), computed in float32 as llama2.c does.
func rmsnorm(o, x, w []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	ss /= float32(len(x))
	ss += eps
	ss = 1 / float32(math.Sqrt(float64(ss)))
	for i, v := range x {
		o[i] = w[i] * (ss * v)
	}
}

// softmax normalizes x in place: exp(x_i - max) / sum.
func softmax(x []float32) {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		sum += e
	}
	for i := range x {
		x[i] /= sum
	}
}

// mulMats computes, for every matrix m_i in ms (all with the same number of
// columns), outs[i][t*rows_i + r] = m_i[r] · x[t*cols:(t+1)*cols] for the n
// input rows of x [n, cols], in one parallel pass over all output rows (see
// matrix.mulRows for the prefill path).
func mulMats(outs [][]float32, ms []*matrix, x []float32, n int) {
	total := 0
	for _, m := range ms {
		total += m.rows
	}
	cols := ms[0].cols
	in := prepareInputs(ms, x, n, cols)
	defer in.release()
	parallelFor(total, n*cols, func(lo, hi int) {
		base := 0
		for i, m := range ms {
			if a, b := max(lo, base), min(hi, base+m.rows); a < b {
				m.mulRows(outs[i], in, n, a-base, b-base)
			}
			base += m.rows
		}
	})
}

// mulGLU computes the gated feed-forward hidden state hb [n, FFNDim]:
// hb[t][r] = act(w1[r]·x_t) * (w3[r]·x_t) with act silu(g) = g/(1+e^-g)
// (SwiGLU, Shazeer 2020, eq. 6) or the tanh approximation of GELU
// 0.5g(1+tanh(sqrt(2/pi)(g+0.044715g^3))) (GeGLU; Hendrycks & Gimpel 2016).
// up [n, FFNDim] is scratch for the w3 products.
func mulGLU(hb, up []float32, w1, w3 *matrix, x []float32, n int, act Activation) {
	f, cols := w1.rows, w1.cols
	in := prepareInputs([]*matrix{w1, w3}, x, n, cols)
	defer in.release()
	parallelFor(f, 2*n*cols, func(lo, hi int) {
		w1.mulRows(hb, in, n, lo, hi)
		w3.mulRows(up, in, n, lo, hi)
		for t := range n {
			if act == ActGELUTanh {
				for r := lo; r < hi; r++ {
					hb[t*f+r] = geluTanh(hb[t*f+r]) * up[t*f+r]
				}
				continue
			}
			for r := lo; r < hi; r++ {
				g := hb[t*f+r]
				g *= 1 / (1 + float32(math.Exp(float64(-g))))
				hb[t*f+r] = g * up[t*f+r]
			}
		}
	})
}

// geluTanh is GELU with the tanh approximation (transformers
// gelu_pytorch_tanh), computed in float64.
func geluTanh(g float32) float32 {
	x := float64(g)
	return float32(0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))))
}
