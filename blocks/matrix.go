package blocks

import (
	"fmt"
	"math"
	"sync"

	"github.com/x448/float16"

	"github.com/swarmllm/swarm/swarm"
)

// q8BlockSize and q8BlockBytes describe GGML's Q8_0 layout: 32 int8 values
// with one little-endian f16 scale first, 34 bytes per block
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, ggml-common.h
// block_q8_0).
const (
	q8BlockSize  = 32
	q8BlockBytes = 34
)

// matrix is a weight matrix [rows, cols] in row-major order (row r holds the
// weights of output feature r), kept in the dtype it was stored in so that a
// decode step reads as few bytes as possible. Exactly one of the data slices
// is set, according to dtype.
type matrix struct {
	rows, cols int
	dtype      swarm.DType
	f32        []float32 // DTypeF32: rows*cols values
	u16        []uint16  // DTypeF16 and DTypeBF16: rows*cols raw 16-bit values
	// q holds the blocks of the quantized dtypes (Q8_0, Q4_K, ...) as
	// stored: rows * cols/bs blocks of bb bytes each.
	q      []byte
	deq    dequantizer // expands one block of q (quant.go)
	bs, bb int         // elements and bytes per block of q
}

// newMatrix allocates a zero matrix [rows, cols] of dtype d. For the
// quantized dtypes cols must be a multiple of the block size (32 or 256).
func newMatrix(rows, cols int, d swarm.DType) (*matrix, error) {
	m := &matrix{rows: rows, cols: cols, dtype: d}
	n := rows * cols
	switch d {
	case swarm.DTypeF32:
		m.f32 = make([]float32, n)
	case swarm.DTypeF16, swarm.DTypeBF16:
		m.u16 = make([]uint16, n)
	default:
		deq, ok := dequantizers[d]
		if !ok {
			return nil, fmt.Errorf("%w: unsupported dtype %v", ErrFormat, d)
		}
		if err := d.CheckRow(int64(cols)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		m.deq, m.bs, m.bb = deq, d.BlockSize(), int(d.Bytes(int64(d.BlockSize())))
		m.q = make([]byte, rows*(cols/m.bs)*m.bb)
	}
	return m, nil
}

// bytes is the storage size of the matrix in bytes.
func (m *matrix) bytes() int64 {
	return m.dtype.Bytes(int64(m.rows) * int64(m.cols))
}

// rowBytes is the storage size of one row in bytes.
func (m *matrix) rowBytes() int {
	return int(m.dtype.Bytes(int64(m.cols)))
}

// setRaw decodes little-endian storage bytes for rows [r0, r0+len/rowBytes)
// into the matrix. len(raw) must be a multiple of rowBytes().
func (m *matrix) setRaw(r0 int, raw []byte) {
	switch m.dtype {
	case swarm.DTypeF32:
		copyLE32(m.f32[r0*m.cols:r0*m.cols+len(raw)/4], raw)
	case swarm.DTypeF16, swarm.DTypeBF16:
		copyLE16(m.u16[r0*m.cols:r0*m.cols+len(raw)/2], raw)
	default:
		copy(m.q[r0*m.rowBytes():], raw)
	}
}

// dotRow returns the dot product of row r with x[:cols].
func (m *matrix) dotRow(r int, x []float32) float32 {
	c := m.cols
	switch m.dtype {
	case swarm.DTypeF32:
		return dotF32(m.f32[r*c:(r+1)*c], x[:c])
	case swarm.DTypeF16:
		return dotF16(m.u16[r*c:(r+1)*c], x[:c])
	case swarm.DTypeBF16:
		return dotBF16(m.u16[r*c:(r+1)*c], x[:c])
	case swarm.DTypeQ8_0:
		rb := m.rowBytes()
		return dotQ8_0(m.q[r*rb:(r+1)*rb], x[:c])
	}
	rb := m.rowBytes()
	w, x := m.q[r*rb:(r+1)*rb], x[:c]
	switch m.dtype {
	case swarm.DTypeQ4_0:
		return dotQ4_0(w, x)
	case swarm.DTypeIQ4_NL:
		return dotIQ4_NL(w, x)
	case swarm.DTypeIQ4_XS:
		return dotIQ4_XS(w, x)
	case swarm.DTypeQ4_K:
		return dotQ4_K(w, x)
	case swarm.DTypeQ5_K:
		return dotQ5_K(w, x)
	case swarm.DTypeQ6_K:
		return dotQ6_K(w, x)
	}
	return dotQuant(m.deq, m.bs, m.bb, w, x)
}

// rowF32 writes row r, converted to float32, into dst[:cols].
func (m *matrix) rowF32(r int, dst []float32) {
	c := m.cols
	dst = dst[:c]
	switch m.dtype {
	case swarm.DTypeF32:
		copy(dst, m.f32[r*c:(r+1)*c])
	case swarm.DTypeF16:
		cvtF16(dst, m.u16[r*c:(r+1)*c])
	case swarm.DTypeBF16:
		cvtBF16(dst, m.u16[r*c:(r+1)*c])
	default:
		rb := m.rowBytes()
		dequantRow(m.deq, m.bs, m.bb, m.q[r*rb:(r+1)*rb], dst)
	}
}

// f16Table maps every IEEE binary16 bit pattern to its float32 value; it is
// built on first use (256 KiB).
var f16Table = sync.OnceValue(func() *[65536]float32 {
	var t [65536]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
})

// bf16ToF32 widens a bfloat16 bit pattern (the top 16 bits of a binary32).
func bf16ToF32(w uint16) float32 { return math.Float32frombits(uint32(w) << 16) }

// f32ToF16 rounds a float32 to the nearest binary16 bit pattern.
func f32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// f32ToBF16 rounds a float32 to the nearest bfloat16 (round to nearest even;
// NaN stays NaN).
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// prefillTile is the number of weight rows widened to float32 at once in
// the prefill path (12 rows of 11008 float32 = 516 KiB, inside L2; four
// groups of gemmRows).
const prefillTile = 12

// mulRows computes out[t*m.rows + r] = m[r] · x[t*ldx:t*ldx+cols] for rows
// r in [r0, r1) and inputs t < n of in (see prepareInputs); quantized
// matrices take the inputs quantized to 8 bits where prepareInputs did so
// (mulRowsQ8: every type with the VNNI kernels, Q8_0 on any AVX2 CPU). For
// n > 1 each tile of weight rows is read once (and widened to float32 once
// for f16/bf16) and reused for every input: matrix-matrix work instead of
// n matrix-vector products. Quantized matrices on float32 inputs still
// take one dot product per row and input, a tile of rows at a time.
// Results are bit-identical to the n = 1 path.
func (m *matrix) mulRows(out []float32, in *inputs, n, r0, r1 int) {
	if n > gemmMaxInputs {
		// Blocks of inputs, each over every row of [r0, r1): a block's
		// inputs (64 x cols) stay in L2 while the rows stream past,
		// where a long prefill's inputs (512 x 4096 floats: 8 MiB) were
		// read again from memory for every tile of rows. Every value is
		// the same bits either way.
		views := q8Views.Get().(*[numActKinds]q8Acts)
		defer q8Views.Put(views)
		for t0 := 0; t0 < n; t0 += gemmMaxInputs {
			sub := in.from(t0, views)
			m.mulRowsBlock(out[t0*m.rows:], &sub, min(gemmMaxInputs, n-t0), r0, r1)
		}
		return
	}
	m.mulRowsBlock(out, in, n, r0, r1)
}

// mulRowsBlock is mulRows for n <= gemmMaxInputs.
func (m *matrix) mulRowsBlock(out []float32, in *inputs, n, r0, r1 int) {
	x, ldx, cols := in.x, in.ldx, m.cols
	if k := q8Dtypes[m.dtype]; k != nil && in.q8[k.acts] != nil {
		m.mulRowsQ8(out, in.q8[k.acts], n, r0, r1, k)
		return
	}
	if f16x8 && m.dtype == swarm.DTypeF16 && n > 1 && in.x8.buf != nil {
		m.mulRowsF16x8(out, in.x8, n, r0, r1)
		return
	}
	if n == 1 && m.dtype == swarm.DTypeF16 && len(x) >= cols && r1 > r0 {
		dotF16Rows(m.u16[r0*cols:r1*cols], cols, x[:cols], out[r0:r1])
		return
	}
	if n == 1 || m.q != nil || (f16x8 && m.dtype == swarm.DTypeF16) {
		// (Binary16 rows under f16x8 without the chunk-major inputs: cols
		// not a multiple of 32. The widened path below sums as dotF32.)
		for a := r0; a < r1; a += prefillTile {
			b := min(a+prefillTile, r1)
			for t := range n {
				xt := x[t*ldx : t*ldx+cols]
				for r := a; r < b; r++ {
					out[t*m.rows+r] = m.dotRow(r, xt)
				}
			}
		}
		return
	}
	if m.dtype == swarm.DTypeF16 && gemmF16x3x4 != nil && cols%32 == 0 {
		// Widen in the kernel: the rows are read once, from memory.
		for a := r0; a < r1; a += prefillTile {
			b := min(a+prefillTile, r1)
			gemmTile(out, m.rows, a, f16Tile(m.u16[a*cols:b*cols], b-a, cols, ldx), x, n)
		}
		return
	}
	var buf []float32
	if m.dtype != swarm.DTypeF32 {
		bp := widenBufs.Get().(*[]float32)
		defer widenBufs.Put(bp)
		if cap(*bp) < prefillTile*cols {
			*bp = make([]float32, prefillTile*cols)
		}
		buf = (*bp)[:prefillTile*cols]
	}
	for a := r0; a < r1; a += prefillTile {
		b := min(a+prefillTile, r1)
		var rows []float32
		if m.dtype == swarm.DTypeF32 {
			rows = m.f32[a*cols : b*cols]
		} else {
			rows = buf[:(b-a)*cols]
			for r := a; r < b; r++ {
				m.rowF32(r, rows[(r-a)*cols:])
			}
		}
		if gemmF32x3x4 != nil && cols%32 == 0 {
			gemmTile(out, m.rows, a, f32Tile(rows, b-a, cols, ldx), x, n)
			continue
		}
		t := 0
		for ; t+2 <= n; t += 2 {
			x0, x1 := x[t*ldx:t*ldx+cols], x[(t+1)*ldx:(t+1)*ldx+cols]
			for r := a; r < b; r++ {
				out[t*m.rows+r], out[(t+1)*m.rows+r] = dotF32x2(rows[(r-a)*cols:(r-a+1)*cols], x0, x1)
			}
		}
		if t < n {
			xt := x[t*ldx : t*ldx+cols]
			for r := a; r < b; r++ {
				out[t*m.rows+r] = dotF32(rows[(r-a)*cols:(r-a+1)*cols], xt)
			}
		}
	}
}

// widenBufs recycles mulRows' tiles of rows widened to float32.
var widenBufs = sync.Pool{New: func() any { return new([]float32) }}

// paddedInputs recycles the strided copies of prepareInputs.
var paddedInputs = sync.Pool{New: func() any { return new([]float32) }}

// inputs is the n inputs of a matrix product laid out for mulRows: x with
// rows ldx floats apart, and (when a matrix of the product is Q8_0, Q4_K
// or Q6_K) the same rows quantized to 8 bits in the layouts they take.
type inputs struct {
	x   []float32
	ldx int
	q8  [numActKinds]*q8Acts // by layout, those the matrices need
	// x8 is the chunk-major copy the f16x8 binary16 products take (buf nil
	// when no matrix of the product is binary16, f16x8 is off, or cols is
	// not a multiple of 32).
	x8      x8Layout
	release func()
}

// q8Views recycles the views of inputs.from (pooled: they escape).
var q8Views = sync.Pool{New: func() any { return new([numActKinds]q8Acts) }}

// from returns the inputs t0.. of in, without a release: its quantized
// rows are views, kept in views, of in's buffers.
func (in *inputs) from(t0 int, views *[numActKinds]q8Acts) inputs {
	sub := inputs{x: in.x[t0*in.ldx:], ldx: in.ldx, x8: in.x8}
	sub.x8.t0 += t0
	for k, a := range in.q8 {
		if a != nil {
			views[k] = q8Acts{buf: a.buf[t0*a.stride:], n: a.n - t0, nb: a.nb, stride: a.stride, rowBytes: a.rowBytes}
			sub.q8[k] = &views[k]
		}
	}
	return sub
}

// prepareInputs lays out the n inputs x [n, cols] for a product with the
// matrices ms. For 4 or more inputs of a power-of-two-ish width (cols a
// multiple of 256) x is copied with rows cols+16 floats apart, so the 4
// inputs a GEMM kernel reads at once do not all map to the same L1 cache
// sets (4 KiB aliasing). When one of ms is of a dtype of q8Dtypes (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K..Q6_K, IQ4_XS) and the CPU has
// the VNNI kernels (eightBitActivations), or it is of a q32 format and the
// CPU has the AVX2 ones (eightBitQ32), the inputs are also quantized to 8 bits, once
// for all rows and once per layout (blocks of 32 for the q32 formats,
// Q8_K blocks of 256 for the K-quants). Under f16x8 (gemm_x8.go), when
// one of ms is binary16, n > 1 and cols a multiple of 32, the inputs are
// also copied chunk-major (x8Layout) for mulRowsF16x8, and when all of ms
// are binary16 that copy is the only one. release returns the copies to
// their pools once the products are done.
func prepareInputs(ms []*matrix, x []float32, n, cols int) *inputs {
	in := &inputs{x: x, ldx: cols, release: func() {}}
	for _, m := range ms {
		k := q8Dtypes[m.dtype]
		eightBit := eightBitActivations || (eightBitQ32 && k != nil && k.acts == acts32)
		if eightBit && k != nil && in.q8[k.acts] == nil && k.acts.fits(cols) {
			in.q8[k.acts] = k.acts.quantize(x, cols, n, cols)
		}
	}
	if in.q8 != [numActKinds]*q8Acts{} {
		in.release = func() {
			for _, a := range in.q8 {
				if a != nil {
					a.release()
				}
			}
		}
	}
	if f16x8 && n > 1 && cols%32 == 0 {
		f16s := 0
		for _, m := range ms {
			if m.dtype == swarm.DTypeF16 {
				f16s++
			}
		}
		if f16s > 0 {
			var x8 func()
			in.x8, x8 = newX8Layout(x, n, cols)
			q8 := in.release
			in.release = func() {
				q8()
				x8()
			}
			if f16s == len(ms) {
				return in // no product reads the strided copy
			}
		}
	}
	if n < gemmInputs || cols%256 != 0 {
		return in
	}
	ldx := cols + 16
	p := paddedInputs.Get().(*[]float32)
	if cap(*p) < n*ldx {
		*p = make([]float32, n*ldx)
	}
	xs := (*p)[:n*ldx]
	for t := range n {
		copy(xs[t*ldx:t*ldx+cols], x[t*cols:(t+1)*cols])
	}
	q8 := in.release
	in.x, in.ldx, in.release = xs, ldx, func() {
		q8()
		paddedInputs.Put(p)
	}
	return in
}
