package placement

import (
	"math"
	"math/bits"

	"github.com/swarmllm/swarm/swarm"
)

// This file is eq. (2)'s memory model with an attention-cache size per
// block, s_c(b) (Model.BlockCacheBytes): sliding-window blocks (Gemma 3's
// local layers, Mistral v0.1) hold only their window of positions, so
// they need less than the global blocks' s_c = Model.CacheBytes. Where a
// formula counts m blocks without knowing which (Alg. 1 line 1, eq. 15),
// it counts the m consecutive blocks that need the most
// (Model.WindowCacheBytes), so its guarantee holds wherever the blocks
// land; with one s_c for every block each formula is the paper's.

// cacheBytes returns s_c(b).
func (m Model) cacheBytes(b int) int64 {
	if m.BlockCacheBytes == nil {
		return m.CacheBytes
	}
	return m.BlockCacheBytes[b]
}

// SpanCacheBytes returns sum over the blocks b of span of s_c(b): the
// attention-cache bytes one session needs over span, bytes.
func (m Model) SpanCacheBytes(span swarm.Span) int64 {
	if m.BlockCacheBytes == nil {
		return m.CacheBytes * int64(span.Len())
	}
	var n int64
	for b := span.Start; b < span.End; b++ {
		n += m.BlockCacheBytes[b]
	}
	return n
}

// WindowCacheBytes returns the most attention-cache bytes one session
// needs over n consecutive blocks: max over a of sum_{b=a}^{a+n-1} s_c(b),
// n*s_c with one s_c for every block. n is clipped to [0, Blocks].
func (m Model) WindowCacheBytes(n int) int64 {
	n = max(0, min(n, m.Blocks))
	if m.BlockCacheBytes == nil {
		return m.CacheBytes * int64(n)
	}
	var sum, best int64
	for b := range m.Blocks {
		sum += m.BlockCacheBytes[b]
		if b >= n {
			sum -= m.BlockCacheBytes[b-n]
		}
		if b >= n-1 {
			best = max(best, sum)
		}
	}
	return best
}

// minCacheBytes is the smallest s_c(b).
func (m Model) minCacheBytes() int64 {
	if m.BlockCacheBytes == nil {
		return m.CacheBytes
	}
	least := m.CacheBytes
	for _, c := range m.BlockCacheBytes {
		least = min(least, c)
	}
	return least
}

// blocksFor is the number of blocks m_j of Alg. 1 line 1 that memory
// holds next to r sessions' caches: floor(M / (s_m + s_c r)) with one s_c,
// else the largest n <= L with s_m n + r WindowCacheBytes(n) <= M (the
// left side grows with n, so bisection finds it). No overflow.
func blocksFor(memory int64, m Model, r int64) int64 {
	if m.BlockCacheBytes == nil {
		if r > 0 && m.CacheBytes > (math.MaxInt64-m.BlockBytes)/r {
			return 0
		}
		return memory / (m.BlockBytes + m.CacheBytes*r)
	}
	fits := func(n int) bool {
		w := m.WindowCacheBytes(n)
		weights := m.BlockBytes * int64(n)
		if weights > memory {
			return false
		}
		return r == 0 || w <= (memory-weights)/r
	}
	lo, hi := 0, m.Blocks+1 // fits(lo); !fits(hi) or hi past L
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return int64(lo)
}

// slotsFor is floor(free * n / cache): the block caches of mean size
// cache/n that free bytes hold, without overflow (math.MaxInt when the
// quotient does not fit).
func slotsFor(free int64, n int, cache int64) int {
	hi, lo := bits.Mul64(uint64(free), uint64(n))
	if hi >= uint64(cache) {
		return math.MaxInt
	}
	q, _ := bits.Div64(hi, lo, uint64(cache))
	return int(min(q, math.MaxInt))
}
