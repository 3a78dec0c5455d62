package blocks

// cachePageShift sets the page size of attention caches: a page holds
// 1 << cachePageShift positions (64) of one block's keys or values.
const (
	cachePageShift = 6
	cachePageRows  = 1 << cachePageShift
)

// kvCache is one block's attention cache for one session: keys and values
// [rows, NKVHeads*HeadDim] each, float32 or binary16 (f16), held in pages of cachePageRows
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
	k, v  [][]float32 // float32 pages; page i holds rows i*cachePageRows..
	// k16, v16 are the pages of an f16 cache (k, v stay empty): binary16
	// bit patterns of keys and values already rounded to binary16 when
	// computed (roundF16), so storing them loses nothing.
	k16, v16 [][]uint16
	f16      bool
	ring     int // rows of a ring cache; 0 for a full cache
	// from is the first position a ring cache still holds (it holds
	// from..the session's length-1 when from is below that).
	from int
}

// newKVCache returns an empty cache of rows rows of kvDim values each; ring
// is rows for a ring cache, 0 for a full one; f16 keeps binary16 values.
// No page is allocated yet.
func newKVCache(rows, kvDim, ring int, f16 bool) kvCache {
	pages := (rows + cachePageRows - 1) / cachePageRows
	c := kvCache{kvDim: kvDim, rows: rows, ring: ring, f16: f16}
	if f16 {
		c.k16, c.v16 = make([][]uint16, 0, pages), make([][]uint16, 0, pages)
	} else {
		c.k, c.v = make([][]float32, 0, pages), make([][]float32, 0, pages)
	}
	return c
}

// pages is the number of pages allocated.
func (c *kvCache) pages() int { return len(c.k) + len(c.k16) }

// kHead and vHead return elements off..off+hd of row r of the keys and
// values as float32: in place for a float32 cache, widened into buf [hd]
// for an f16 one. r must lie in a page already allocated (reserve).
func (c *kvCache) kHead(r, off, hd int, buf []float32) []float32 {
	o := (r&(cachePageRows-1))*c.kvDim + off
	if c.f16 {
		cvtF16(buf[:hd], c.k16[r>>cachePageShift][o:o+hd])
		return buf[:hd]
	}
	return c.k[r>>cachePageShift][o : o+hd]
}

func (c *kvCache) vHead(r, off, hd int, buf []float32) []float32 {
	o := (r&(cachePageRows-1))*c.kvDim + off
	if c.f16 {
		cvtF16(buf[:hd], c.v16[r>>cachePageShift][o:o+hd])
		return buf[:hd]
	}
	return c.v[r>>cachePageShift][o : o+hd]
}

// putRow writes the key and value rows k, v [kvDim] into row r.
func (c *kvCache) putRow(r int, k, v []float32) {
	o := (r & (cachePageRows - 1)) * c.kvDim
	p := r >> cachePageShift
	if c.f16 {
		dk, dv := c.k16[p][o:o+c.kvDim], c.v16[p][o:o+c.kvDim]
		for i := range dk {
			dk[i], dv[i] = f32ToF16(k[i]), f32ToF16(v[i])
		}
		return
	}
	copy(c.k[p][o:o+c.kvDim], k)
	copy(c.v[p][o:o+c.kvDim], v)
}

// reserve allocates the pages rows 0..n-1 lie in (n <= rows).
func (c *kvCache) reserve(n int) {
	for c.pages()*cachePageRows < n {
		r := min(cachePageRows, c.rows-c.pages()*cachePageRows) * c.kvDim
		if c.f16 {
			c.k16 = append(c.k16, make([]uint16, r))
			c.v16 = append(c.v16, make([]uint16, r))
			continue
		}
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
		c.putRow(pos+t, k[t*c.kvDim:(t+1)*c.kvDim], v[t*c.kvDim:(t+1)*c.kvDim])
	}
}

// roundF16 rounds every value of x to the nearest binary16 (in place, kept
// as float32): what an f16 cache stores. Attention then reads the same
// numbers from the cache and from the step's own k and v, so prefill and
// decode agree bit for bit. Values beyond binary16's range become ±Inf.
func roundF16(x []float32) {
	t := f16Table()
	for i, f := range x {
		x[i] = t[f32ToF16(f)]
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
		c.putRow(r, k[src:src+kvDim], v[src:src+kvDim])
	}
	c.from = max(c.from, g.pos+g.n-c.ring)
}

// heldBytes is the memory of the pages allocated, bytes.
func (c *kvCache) heldBytes() int64 {
	var n int64
	for i := range c.k {
		n += 4 * int64(len(c.k[i])+len(c.v[i]))
	}
	for i := range c.k16 {
		n += 2 * int64(len(c.k16[i])+len(c.v16[i]))
	}
	return n
}
