package blocks

// cachePageShift sets the page size of attention caches: a page holds
// 1 << cachePageShift positions (64) of one block's keys or values.
const (
	cachePageShift = 6
	cachePageRows  = 1 << cachePageShift
)

// kvCache is one block's attention cache for one session: keys and values
// [rows, NKVHeads*HeadDim] each, float32, held in pages of cachePageRows
// rows that are allocated when a step first writes them. A session opened
// for maxLength positions is admitted for all of them (admission reserves
// the full size, paper 003 eq. 2), but holds only the pages its positions
// reached: an idle or short session costs what it filled, rounded up to a
// page. A full cache has rows = maxLength, position p in row p. A
// sliding-window block's cache may be a ring of ring < maxLength rows
// (swarm.ModelInfo.CacheTokens): position p in row p % ring.
type kvCache struct {
	kvDim int
	rows  int         // capacity: maxLength, or ring
	k, v  [][]float32 // pages; page i holds rows i*cachePageRows..
	ring  int         // rows of a ring cache; 0 for a full cache
	// from is the first position a ring cache still holds (it holds
	// from..the session's length-1 when from is below that).
	from int
}

// newKVCache returns an empty cache of rows rows of kvDim values each; ring
// is rows for a ring cache, 0 for a full one. No page is allocated yet.
func newKVCache(rows, kvDim, ring int) kvCache {
	pages := (rows + cachePageRows - 1) / cachePageRows
	return kvCache{kvDim: kvDim, rows: rows, ring: ring, k: make([][]float32, 0, pages), v: make([][]float32, 0, pages)}
}

// kRow and vRow return row r [kvDim] of the keys and values; r must lie in
// a page already allocated (reserve).
func (c *kvCache) kRow(r int) []float32 {
	o := (r & (cachePageRows - 1)) * c.kvDim
	return c.k[r>>cachePageShift][o : o+c.kvDim]
}

func (c *kvCache) vRow(r int) []float32 {
	o := (r & (cachePageRows - 1)) * c.kvDim
	return c.v[r>>cachePageShift][o : o+c.kvDim]
}

// reserve allocates the pages rows 0..n-1 lie in (n <= rows).
func (c *kvCache) reserve(n int) {
	for len(c.k)*cachePageRows < n {
		r := min(cachePageRows, c.rows-len(c.k)*cachePageRows) * c.kvDim
		c.k = append(c.k, make([]float32, r))
		c.v = append(c.v, make([]float32, r))
	}
}

// putRows writes the keys and values k, v [n, kvDim] of positions
// pos..pos+n-1 into a full cache.
func (c *kvCache) putRows(pos int, k, v []float32) {
	n := len(k) / c.kvDim
	c.reserve(pos + n)
	for t := range n {
		copy(c.kRow(pos+t), k[t*c.kvDim:(t+1)*c.kvDim])
		copy(c.vRow(pos+t), v[t*c.kvDim:(t+1)*c.kvDim])
	}
}

// store writes the keys and values of the seg's rows of k and v [rows,
// kvDim] into the ring cache c (the last ring of them when the seg is
// longer), after their attention was computed: the queries of a seg read
// its own positions from k and v, so a long prefill never overwrites
// positions that its own earlier queries still attend to.
func (c *kvCache) store(k, v []float32, g seg, kvDim int) {
	c.reserve(min(c.ring, g.pos+g.n))
	for t := max(0, g.n-c.ring); t < g.n; t++ {
		r := (g.pos + t) % c.ring
		src := (g.off + t) * kvDim
		copy(c.kRow(r), k[src:src+kvDim])
		copy(c.vRow(r), v[src:src+kvDim])
	}
	c.from = max(c.from, g.pos+g.n-c.ring)
}

// heldBytes is the memory of the pages allocated, bytes.
func (c *kvCache) heldBytes() int64 {
	var n int64
	for i := range c.k {
		n += 4 * int64(len(c.k[i])+len(c.v[i]))
	}
	return n
}
