package blocks

import (
	"encoding/binary"
	"math"
	"sync"
)

// Activations quantized to 8 bits, as llama.cpp quantizes the inputs of
// its quantized matrix products (ggml-quants.c quantize_row_q8_0): each
// block of 32 values x_i gets a scale d = max|x_i| / 127 and integers
// q_i = round(x_i / d) in [-127, 127]. A Q8_0 weight row then dots with an
// input block by block in integers, sum_i w_i q_i, exact in int32, and
// only the per-block scales dw * dx are float32. This is what makes
// quantized decode and prefill compute-cheap (VNNI VPDPBUSD does 4
// multiply-adds of bytes per 32-bit lane).
//
// Layout of one input row (q8ActBlockBytes per block of 32 values, blocks
// in order), chosen so the kernels reach all three parts from one base
// pointer and one offset:
//
//	bytes  0..31  q_i as int8
//	bytes 32..63  c_j = -128 * (q_4j + q_4j+1 + q_4j+2 + q_4j+3) as int32, j < 8
//	bytes 64..67  d as float32 (llama.cpp rounds it to binary16; float32
//	              keeps large activations finite)
//
// c_j lets a kernel multiply unsigned bytes (w + 128) with the signed q
// (VPDPBUSD) and still get sum w*q in lane j: it starts lane j at c_j.
const q8ActBlockBytes = 68

// q8Lanes is the 32-bit lanes of one block's integer sum: lane j holds
// sum_{k<4} w_{4j+k} q_{4j+k}. Every Q8_0 x Q8 kernel keeps 8 float32
// accumulators per output, lane j adding float32(lane j) * (dw * dx) with
// one fused multiply-add per block in block order, and reduces them as
// reduceLanes does; that fixed order makes a row's result independent of
// the kernel (one row, four rows, a 3x4 tile) and of the batch.
const q8Lanes = 8

// q8Acts is n input rows of cols values quantized to 8 bits, each row
// stride bytes apart in buf (stride >= nb*q8ActBlockBytes).
type q8Acts struct {
	buf        []byte
	n, nb      int
	stride     int
	returnToFn func()
}

// row returns input t's blocks.
func (a *q8Acts) row(t int) []byte { return a.buf[t*a.stride : t*a.stride+a.nb*q8ActBlockBytes] }

// release returns the buffer to its pool.
func (a *q8Acts) release() { a.returnToFn() }

// q8ActPool recycles activation buffers.
var q8ActPool = sync.Pool{New: func() any { return new([]byte) }}

// quantizeActs quantizes the n rows x[t*ldx : t*ldx+cols] (cols a multiple
// of 32) into a pooled q8Acts; call release when done.
func quantizeActs(x []float32, ldx, n, cols int) *q8Acts {
	nb := cols / q8BlockSize
	stride := nb * q8ActBlockBytes
	if stride%4096 == 0 {
		stride += 64 // keep rows of inputs off the same L1 sets
	}
	p := q8ActPool.Get().(*[]byte)
	if cap(*p) < n*stride {
		*p = make([]byte, n*stride)
	}
	a := &q8Acts{buf: (*p)[:n*stride], n: n, nb: nb, stride: stride, returnToFn: func() { q8ActPool.Put(p) }}
	for t := range n {
		quantizeRowQ8(a.row(t), x[t*ldx:t*ldx+cols])
	}
	return a
}

// quantizeRowQ8 writes the blocks of x (len a multiple of 32) into dst
// in the layout above.
func quantizeRowQ8(dst []byte, x []float32) {
	for b := range len(x) / q8BlockSize {
		xs := x[b*q8BlockSize : (b+1)*q8BlockSize : (b+1)*q8BlockSize]
		blk := dst[b*q8ActBlockBytes : (b+1)*q8ActBlockBytes : (b+1)*q8ActBlockBytes]
		var amax float32
		for _, v := range xs {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		for j := range q8Lanes {
			var s int32
			for k := range 4 {
				q := int8(math.RoundToEven(float64(xs[4*j+k] * id)))
				blk[4*j+k] = byte(q)
				s += int32(q)
			}
			binary.LittleEndian.PutUint32(blk[32+4*j:], uint32(-128*s))
		}
		binary.LittleEndian.PutUint32(blk[64:], math.Float32bits(d))
	}
}

// reduceLanes sums 8 lane accumulators as the kernels do (REDUCE's last
// steps): fold the upper four onto the lower four, then pairs.
func reduceLanes(a *[q8Lanes]float32) float32 {
	u0, u1, u2, u3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
	return (u0 + u1) + (u2 + u3)
}

// fma32 is a float32 fused multiply-add a*b + c. The product of two
// float32 is exact in float64, so only the sum can round twice (to
// float64, then float32); the portable kernels accept that, the assembly
// ones use VFMADD.
func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// q8_0Lanes adds to acc the lanes of Q8_0 row w times the quantized input
// a over blocks [0, nb): the portable kernel every Q8_0 x Q8 product uses
// without assembly.
func q8_0Lanes(w, a []byte, nb int, acc *[q8Lanes]float32) {
	t := f16Table()
	for b := range nb {
		wb := w[b*q8BlockBytes : (b+1)*q8BlockBytes : (b+1)*q8BlockBytes]
		ab := a[b*q8ActBlockBytes : (b+1)*q8ActBlockBytes : (b+1)*q8ActBlockBytes]
		s := t[binary.LittleEndian.Uint16(wb)] * math.Float32frombits(binary.LittleEndian.Uint32(ab[64:]))
		for j := range q8Lanes {
			var l int32
			for k := range 4 {
				l += int32(int8(wb[2+4*j+k])) * int32(int8(ab[4*j+k]))
			}
			acc[j] = fma32(float32(l), s, acc[j])
		}
	}
}

// dotQ8_0Q8 is the dot product of Q8_0 row w with the quantized input a
// (both nb blocks): the result every path gives for this row and input.
var dotQ8_0Q8 = func(w, a []byte, nb int) float32 {
	var acc [q8Lanes]float32
	q8_0Lanes(w, a, nb, &acc)
	return reduceLanes(&acc)
}

// q8_0Tile3x4, when not nil, adds to acc the lanes of 3 rows (ldw bytes
// apart) times 4 inputs (lda bytes apart), output r*4+t, exactly as
// q8_0Lanes would; nil without the assembly kernels.
var q8_0Tile3x4 func(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32)

// mulRowsQ8_0 computes out[t*m.rows + r] = dotQ8_0Q8(row r, input t) for
// rows [r0, r1) of the Q8_0 matrix m and the n quantized inputs a, a tile
// of rows at a time: 3x4 groups, then one by one.
func (m *matrix) mulRowsQ8_0(out []float32, a *q8Acts, n, r0, r1 int) {
	rb, nb := m.rowBytes(), a.nb
	for a0 := r0; a0 < r1; a0 += prefillTile {
		b := min(a0+prefillTile, r1)
		t := 0
		if q8_0Tile3x4 != nil {
			for ; t+4 <= n; t += 4 {
				r := a0
				for ; r+3 <= b; r += 3 {
					var acc [3 * 4 * q8Lanes]float32
					q8_0Tile3x4(m.q[r*rb:], rb, a.buf[t*a.stride:], a.stride, nb, &acc)
					for i := range 12 {
						out[(t+i%4)*m.rows+r+i/4] = reduceLanes((*[q8Lanes]float32)(acc[i*q8Lanes:]))
					}
				}
				for ; r < b; r++ {
					for tt := t; tt < t+4; tt++ {
						out[tt*m.rows+r] = dotQ8_0Q8(m.q[r*rb:(r+1)*rb], a.row(tt), nb)
					}
				}
			}
		}
		// One row at a time for single inputs: decode reads the weights from
		// memory, and one stream per core reads them faster than several
		// (BenchmarkDecodeBlock7B: 33 GB/s against 18 for 4 rows at once).
		for ; t < n; t++ {
			r := a0
			for ; r < b; r++ {
				out[t*m.rows+r] = dotQ8_0Q8(m.q[r*rb:(r+1)*rb], a.row(t), nb)
			}
		}
	}
}
