package blocks

import (
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// layer is the weights of one transformer block (Llama: pre-norm attention
// and SwiGLU feed-forward, each with a residual connection).
type layer struct {
	attnNorm []float32 // [DModel] RMSNorm weight before attention
	wq       *matrix   // [NHeads*HeadDim, DModel]
	wk       *matrix   // [NKVHeads*HeadDim, DModel]
	wv       *matrix   // [NKVHeads*HeadDim, DModel]
	wo       *matrix   // [DModel, NHeads*HeadDim]
	ffnNorm  []float32 // [DModel] RMSNorm weight before the feed-forward
	w1       *matrix   // gate [FFNDim, DModel]
	w2       *matrix   // down [DModel, FFNDim]
	w3       *matrix   // up [FFNDim, DModel]
	// stored is the block's weight bytes as stored in the model file, s_m
	// (paper 003 eq. 2); 0 means "as held in memory" (norms as float32).
	stored int64
}

// bytes is the block's weight bytes: as stored in the file when known,
// else as held in memory.
func (l *layer) bytes() int64 {
	if l.stored > 0 {
		return l.stored
	}
	n := 4 * int64(len(l.attnNorm)+len(l.ffnNorm))
	for _, m := range []*matrix{l.wq, l.wk, l.wv, l.wo, l.w1, l.w2, l.w3} {
		n += m.bytes()
	}
	return n
}

// kvCache is one block's attention cache for one session: keys and values
// [maxLength, NKVHeads*HeadDim] each, float32.
type kvCache struct {
	k, v []float32
}

// scratch is a session's working memory for a Forward call of n tokens.
type scratch struct {
	n        int
	xb, xb2  []float32 // [n, DModel]
	q, att   []float32 // [n, NHeads*HeadDim]
	k, v     []float32 // [n, NKVHeads*HeadDim]
	hb, up   []float32 // [n, FFNDim]
	cos, sin []float32 // [n, HeadDim/2]
}

func (s *scratch) grow(info swarm.ModelInfo, n int) {
	if n <= s.n {
		return
	}
	qDim, kvDim := info.NHeads*info.HeadDim, info.NKVHeads*info.HeadDim
	s.n = n
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
// cache, which must already hold positions 0..pos-1); s.cos/s.sin hold the
// RoPE angles of every row. The matrix products span all rows at once (one
// pass over the weights for the whole batch); a row's result depends only on
// that row and its own session's cache, never on the other rows, so a
// session's output is bit for bit the same alone or in any batch.
func (e *cpuEngine) forwardBlock(l *layer, segs []seg, s *scratch, x []float32, n int) {
	info := &e.info
	d, hd := info.DModel, info.HeadDim
	qDim, kvDim := info.NHeads*hd, info.NKVHeads*hd
	eps := float32(info.NormEps)

	// Attention: x += Wo · attention(RoPE(Wq·xb), RoPE(Wk·xb), Wv·xb), xb = RMSNorm(x).
	for t := range n {
		rmsnorm(s.xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.attnNorm, eps)
	}
	mulMats([][]float32{s.q, s.k, s.v}, []*matrix{l.wq, l.wk, l.wv}, s.xb, n)
	half := hd / 2
	for t := range n {
		cos, sin := s.cos[t*half:(t+1)*half], s.sin[t*half:(t+1)*half]
		e.rope.apply(s.q[t*qDim:(t+1)*qDim], info.NHeads, cos, sin)
		e.rope.apply(s.k[t*kvDim:(t+1)*kvDim], info.NKVHeads, cos, sin)
	}
	for _, g := range segs {
		copy(g.c.k[g.pos*kvDim:(g.pos+g.n)*kvDim], s.k[g.off*kvDim:(g.off+g.n)*kvDim])
		copy(g.c.v[g.pos*kvDim:(g.pos+g.n)*kvDim], s.v[g.off*kvDim:(g.off+g.n)*kvDim])
	}
	e.attention(s.att, s.q, segs, n)
	mulMats([][]float32{s.xb2}, []*matrix{l.wo}, s.att, n)
	for i := range n * d {
		x[i] += s.xb2[i]
	}

	// Feed-forward: x += W2 · (silu(W1·xb) * (W3·xb)), xb = RMSNorm(x).
	for t := range n {
		rmsnorm(s.xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.ffnNorm, eps)
	}
	mulSwiGLU(s.hb, s.up, l.w1, l.w3, s.xb, n)
	mulMats([][]float32{s.xb2}, []*matrix{l.w2}, s.hb, n)
	for i := range n * d {
		x[i] += s.xb2[i]
	}
}

// attention computes causal grouped-query attention for the n query rows q
// [n, NHeads*HeadDim] of segs, each at its session's positions over its own
// cache, writing att [n, NHeads*HeadDim]. Query head h reads KV head
// h/(NHeads/NKVHeads). Scores are q·k/sqrt(HeadDim), softmax over positions
// 0..p (Vaswani et al. 2017, eq. 1).
func (e *cpuEngine) attention(att, q []float32, segs []seg, n int) {
	info := &e.info
	hd, nh := info.HeadDim, info.NHeads
	qDim, kvDim := nh*hd, info.NKVHeads*hd
	group := nh / info.NKVHeads
	sq := float32(math.Sqrt(float64(hd)))
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
		for th := lo; th < hi; th++ {
			t, h := th/nh, th%nh
			g := &segs[row[t]]
			c := g.c
			p := g.pos + t - g.off
			qh := q[t*qDim+h*hd : t*qDim+(h+1)*hd]
			off := (h / group) * hd
			sc := scores[:p+1]
			for j := range sc {
				sc[j] = dotF32(qh, c.k[j*kvDim+off:j*kvDim+off+hd]) / sq
			}
			softmax(sc)
			oh := att[t*qDim+h*hd : t*qDim+(h+1)*hd]
			clear(oh)
			for j, a := range sc {
				vj := c.v[j*kvDim+off : j*kvDim+off+hd]
				for i := range oh {
					oh[i] += a * vj[i]
				}
			}
		}
	})
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
	parallelFor(total, n*cols, func(lo, hi int) {
		base := 0
		for i, m := range ms {
			if a, b := max(lo, base), min(hi, base+m.rows); a < b {
				m.mulRows(outs[i], x, n, a-base, b-base)
			}
			base += m.rows
		}
	})
}

// mulSwiGLU computes the gated feed-forward hidden state hb [n, FFNDim]:
// hb[t][r] = silu(w1[r]·x_t) * (w3[r]·x_t), silu(g) = g/(1+e^-g) (Shazeer
// 2020, eq. 6). up [n, FFNDim] is scratch for the w3 products.
func mulSwiGLU(hb, up []float32, w1, w3 *matrix, x []float32, n int) {
	f, cols := w1.rows, w1.cols
	parallelFor(f, 2*n*cols, func(lo, hi int) {
		w1.mulRows(hb, x, n, lo, hi)
		w3.mulRows(up, x, n, lo, hi)
		for t := range n {
			for r := lo; r < hi; r++ {
				g := hb[t*f+r]
				g *= 1 / (1 + float32(math.Exp(float64(-g))))
				hb[t*f+r] = g * up[t*f+r]
			}
		}
	})
}
