package blocks

import (
	"sync"
	"unsafe"
)

// The f16x8 products of binary16 rows: what CPUs with AVX2 but not
// AVX-512 run (f16x8, set at init). A row's dot product keeps one 8-lane
// accumulator (lane j sums elements 8i+j, one fused multiply-add per
// 8-element group, in order), reduced by reduce8, then the tail element by
// element (dotF16x8Go is the definition). dotF16's four accumulators
// (kernels_amd64.s) make a 3-row x 4-input tile on 16 AVX2 registers run as
// four passes over its data, each reading a quarter of every cache line;
// with one accumulator per output the tile is one pass and reads each line
// once: on a 2-core Zen 3 (32 KiB of L1) 16 inputs run 1.8-1.9x faster
// (BenchmarkMulRowsF16: 102-112 against 55-57 GFLOP/s on the 7B
// feed-forward shapes), and 16 sessions of a 7B-shaped f16 span 1.8x
// (swarm bench server). Every product of a binary16 row
// (decode's dotF16Rows, the batch's tiles, the rows left over) sums this
// way while f16x8 is on, so a session's results do not depend on its
// batch; they differ from the four-accumulator kernels' in the last bits,
// which Kernels names ("+f16x8").

// f16x8 reports whether the binary16 products are the f16x8 ones: dotF16
// and dotF16Rows sum as dotF16x8Go, and mulRows runs gemmF16x8Tile over the
// chunk-major inputs of prepareInputs.
var f16x8 bool

// gemmF16x8Tile, where f16x8, adds to acc[g*x8Acc + (r*4+t)*8 + j] lane j
// of the f16x8 sums of row r < 3 of group g < groups (at w[(3*g+r)*ldw:];
// ldw 0 repeats one row) times input t < 4 of x (ldx apart) over
// 32*blocks elements, and group g < pfrows prefetches npf (<= blocks)
// cache lines from pf + g*pfstride bytes on to L2 (gemmF16x8TileAVX2): a
// chunk's calls for one group of inputs in one Go call.
var gemmF16x8Tile func(w []uint16, ldw, groups int, x []float32, ldx int, blocks int, acc []float32, pf unsafe.Pointer, pfstride, pfrows, npf int)

// x8Reduce, where f16x8, stores to out[t*ldo + 3*g + r] reduce8 of
// acc[g*x8Acc + (r*4+t)*8:] for the groups groups g of 3 rows r and the 4
// inputs t (x8ReduceAVX2): the sums of a tile's full groups, bit for bit
// x8ReduceGo's.
var x8Reduce func(acc []float32, groups int, out []float32, ldo int)

// x8ReduceGo is what x8Reduce computes, the definition it is tested
// against.
func x8ReduceGo(acc []float32, groups int, out []float32, ldo int) {
	for g := range groups {
		for t := range 4 {
			for r := range 3 {
				out[t*ldo+3*g+r] = reduce8(acc[g*x8Acc+(r*4+t)*8:])
			}
		}
	}
}

const (
	// x8Acc is one 3x4 tile's accumulators: 12 outputs of 8 lanes.
	x8Acc = 3 * 4 * 8
	// x8Chunk is the columns of one chunk of the inputs' layout and of one
	// kernel call: a tile's 24 rows (12 KiB of binary16) and a group of 4
	// inputs' chunk (4 KiB) stay in a 32 KiB L1 while every row group meets
	// every input. On a 2-core Zen 3 (BenchmarkMulRowsF16's mats, 16
	// inputs, 3 interleaved rounds, medians) 256 and 512 columns with 24
	// rows gave 101-109 GFLOP/s, 12 rows 78-96, 48 rows 96-105; in
	// scratch loops before this file, 1024 columns lost 10-30% and inputs
	// rows apart (not chunk-major) 20%.
	x8Chunk = 256
	// x8TileRows is the rows of one tile: its 8 groups of 3 times the
	// inputs' groups of 4 are the calls of one chunk, and their prefetches
	// (one row's next chunk each) cover the tile's next chunk.
	x8TileRows = 24
)

// reduce8 sums the 8 lanes of a as REDUCE8 (f16x8_amd64.s) does: the upper
// half onto the lower, then two pairwise (horizontal) adds.
func reduce8(a []float32) float32 {
	a = a[:8]
	return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
}

// dotF16x8Go is the f16x8 dot product of w and x[:len(w)], the definition
// the assembly kernels are tested against: float32 fused multiply-adds
// (fma32: the product of two float32 values is exact in float64, and the
// sum is rounded to float64 then to float32, which in rare cases differs
// from one rounding; the tests' seeded values meet none).
func dotF16x8Go(w []uint16, x []float32) float32 {
	t := f16Table()
	x = x[:len(w)]
	var lanes [8]float32
	n := len(w) / 8 * 8
	for i := 0; i < n; i += 8 {
		for j := range lanes {
			lanes[j] = fma32(t[w[i+j]], x[i+j], lanes[j])
		}
	}
	s := reduce8(lanes[:])
	for i := n; i < len(w); i++ {
		s = fma32(t[w[i]], x[i], s)
	}
	return s
}

// x8Layout is the inputs of a product laid out chunk-major for gemmF16x8Tile:
// chunk j (columns [j*x8Chunk, j*x8Chunk+cj)) holds the n inputs' cj
// columns one after the other, at buf[j*n*x8Chunk + t*cj:], so that a
// kernel call's 4 inputs are 4 KiB of consecutive memory. n is a multiple
// of 4; inputs past the product's are zero.
type x8Layout struct {
	buf []float32
	n   int // inputs in the layout
	t0  int // the first input of this view (inputs.from)
}

// x8Bufs recycles the layouts' buffers.
var x8Bufs = sync.Pool{New: func() any { return new([]float32) }}

// newX8Layout copies the n inputs x [n, cols] (cols a multiple of 32) into a
// pooled chunk-major layout of n rounded up to 4 inputs; release returns
// it.
func newX8Layout(x []float32, n, cols int) (l x8Layout, release func()) {
	n4 := (n + 3) / 4 * 4
	p := x8Bufs.Get().(*[]float32)
	if cap(*p) < n4*cols {
		*p = make([]float32, n4*cols)
	}
	buf := (*p)[:n4*cols]
	for c0 := 0; c0 < cols; c0 += x8Chunk {
		cj := min(x8Chunk, cols-c0)
		base := c0 * n4
		for t := range n4 {
			dst := buf[base+t*cj : base+(t+1)*cj]
			if t < n {
				copy(dst, x[t*cols+c0:t*cols+c0+cj])
			} else {
				clear(dst)
			}
		}
	}
	return x8Layout{buf: buf, n: n4}, func() { x8Bufs.Put(p) }
}

// x8Scratch is one mulRowsF16x8 call's accumulators: a tile's row groups
// (up to 7 of 3 rows and 2 of one row left over, or 8 of 3) times
// gemmMaxInputs/4 input groups.
type x8Scratch [(x8TileRows/3 + 1) * gemmMaxInputs / 4 * x8Acc]float32

var x8Scratches = sync.Pool{New: func() any { return new(x8Scratch) }}

// mulRowsF16x8 is mulRows for a binary16 matrix with f16x8 and the inputs'
// chunk-major layout l (n <= gemmMaxInputs inputs from l.t0):
// out[t*m.rows+r] = the f16x8 dot product of row r and input t, bit for
// bit what dotF16 gives, for r in [r0, r1). Tiles of x8TileRows rows go
// chunk by chunk over the columns; in each chunk every group of 3 rows
// meets every group of 4 inputs (the inputs padded to a multiple of 4 with
// zeros, whose outputs are dropped), and each call prefetches one row of
// the tile's next chunk (or of the next tile's first). A group of fewer
// than 3 rows left at the end of the range runs as 3 copies of each row
// (ldw 0).
func (m *matrix) mulRowsF16x8(out []float32, l x8Layout, n, r0, r1 int) {
	cols := m.cols
	tg := (n + 3) / 4
	scratch := x8Scratches.Get().(*x8Scratch)
	defer x8Scratches.Put(scratch)
	for a := r0; a < r1; a += x8TileRows {
		b := min(a+x8TileRows, r1)
		full := (b - a) / 3
		groups := full + (b - a) - 3*full // then one group per row left over
		clear(scratch[:groups*tg*x8Acc])
		for c0 := 0; c0 < cols; c0 += x8Chunk {
			cj := min(x8Chunk, cols-c0)
			xj := l.buf[c0*l.n+l.t0*cj:]
			// What this chunk's calls prefetch: the rows of the tile's next
			// chunk, or of the next tile's first chunk.
			pa, pb, pc := a, b, c0+x8Chunk
			if pc >= cols {
				pa, pb, pc = b, min(b+x8TileRows, r1), 0
			}
			plines := min(x8Chunk, cols-pc) / 32
			for t := range tg {
				xt := xj[t*4*cj:]
				// Call t*groups+g prefetches row pa+t*groups+g of it.
				p0 := pa + t*groups
				var pf unsafe.Pointer
				if p0 < pb {
					pf = unsafe.Pointer(&m.u16[p0*cols+pc])
				}
				gemmF16x8Tile(m.u16[a*cols+c0:], cols, full, xt, cj, cj/32, scratch[t*groups*x8Acc:], pf, 2*cols, pb-p0, plines)
				for g := full; g < groups; g++ {
					pf, npf := unsafe.Pointer(nil), 0
					if p := p0 + g; p < pb {
						pf, npf = unsafe.Pointer(&m.u16[p*cols+pc]), plines
					}
					gemmF16x8Tile(m.u16[(a+3*full+g-full)*cols+c0:], 0, 1, xt, cj, cj/32, scratch[(t*groups+g)*x8Acc:], pf, 0, 1, npf)
				}
			}
		}
		for t := range tg {
			g0 := 0
			if 4*t+4 <= n { // the full groups of 4 inputs in one call
				x8Reduce(scratch[t*groups*x8Acc:], full, out[4*t*m.rows+a:], m.rows)
				g0 = full
			}
			for g := g0; g < groups; g++ {
				s := scratch[(t*groups+g)*x8Acc:]
				nr, row := 3, a+3*g
				if g >= full {
					nr, row = 1, a+3*full+(g-full)
				}
				for tt := range min(4, n-4*t) {
					o := out[(4*t+tt)*m.rows:]
					for r := range nr {
						o[row+r] = reduce8(s[(r*4+tt)*8:])
					}
				}
			}
		}
	}
}
