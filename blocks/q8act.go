package blocks

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/swarmllm/swarm/swarm"
)

// Activations quantized to 8 bits, as llama.cpp quantizes the inputs of
// its quantized matrix products (ggml-quants.c quantize_row_q8_0): each
// block of 32 values x_i gets a scale d = max|x_i| / 127 and integers
// q_i = round(x_i / d) in [-127, 127] (ties to even). A Q8_0 weight row
// then dots with an input block by block in integers, sum w_i q_i, exact
// in int32, and only the per-block scales dw * dx are float32. This is
// what makes quantized decode and prefill compute-cheap (VNNI VPDPBUSD
// does 4 multiply-adds of bytes per 32-bit lane).
//
// Layout of one input row: pairs of blocks (2p, 2p+1), q8ActPairBytes
// each, laid out as the 16-lane kernels load them:
//
//	bytes   0..63   q_i of block 2p, then of block 2p+1, as int8
//	bytes  64..127  c_j = -128 * (q_4j + ... + q_4j+3), int32, 8 per block
//	bytes 128..191  d of block 2p eight times, then d of block 2p+1 eight
//	                times, float32: d rounded to binary16, as llama.cpp's
//	                block_q8_0 and block_q8_1 store it (so that the products
//	                agree with llama.cpp's to float32 rounding: its Q4_0
//	                and Q8_0 llama logits to 5e-7), unless it is beyond
//	                binary16's range (|x| over 8.3e6), where llama.cpp's
//	                would be infinite and ours stays float32
//	bytes 192..255  not read (a pair stays 256 bytes, whole cache lines)
//
// An odd last block is paired with a block of zeros (q, c and d all 0).
// c_j lets a kernel multiply unsigned bytes (w + 128) with the signed q
// (VPDPBUSD) and still get sum w*q in lane j: it starts lane j at c_j.
const q8ActPairBytes = 256

// q8Lanes is the float32 accumulators of one output of a Q8_0 x Q8
// product. Lane j of block b's integer sum is sum_{k<4} w_{32b+4j+k}
// q_{32b+4j+k}; accumulator 8*(b%2)+j adds float32(that sum) * (dw_b *
// dx_b) with one fused multiply-add per block, in block order. The sum is
// reduceLanes of the 16 accumulators. Every kernel (one row, a 3x4 tile,
// the portable one) does exactly this, so a row's result depends neither
// on the kernel nor on the batch.
const q8Lanes = 16

// q8Acts is n input rows of cols values quantized to 8 bits, each row
// stride bytes apart in buf (stride >= pairs*q8ActPairBytes).
type q8Acts struct {
	buf        []byte
	n, nb      int
	stride     int
	rowBytes   int // bytes of one row's blocks
	returnToFn func()
}

// newQ8Acts returns pooled room for n rows of nb blocks of 32, stride
// bytes apart, rowBytes each.
func newQ8Acts(n, nb, stride, rowBytes int) *q8Acts {
	p := q8ActPool.Get().(*[]byte)
	if cap(*p) < n*stride {
		*p = make([]byte, n*stride)
	}
	return &q8Acts{buf: (*p)[:n*stride], n: n, nb: nb, stride: stride, rowBytes: rowBytes, returnToFn: func() { q8ActPool.Put(p) }}
}

// q8Pairs is the block pairs of nb blocks.
func q8Pairs(nb int) int { return (nb + 1) / 2 }

// row returns input t's blocks.
func (a *q8Acts) row(t int) []byte {
	return a.buf[t*a.stride : t*a.stride+a.rowBytes]
}

// release returns the buffer to its pool.
func (a *q8Acts) release() { a.returnToFn() }

// q8ActPool recycles activation buffers.
var q8ActPool = sync.Pool{New: func() any { return new([]byte) }}

// quantizeActs quantizes the n rows x[t*ldx : t*ldx+cols] (cols a multiple
// of 32) into a pooled q8Acts; call release when done.
func quantizeActs(x []float32, ldx, n, cols int) *q8Acts {
	nb := cols / q8BlockSize
	stride := q8Pairs(nb) * q8ActPairBytes
	if stride%4096 == 0 {
		stride += 64 // keep rows of inputs off the same L1 sets
	}
	a := newQ8Acts(n, nb, stride, q8Pairs(nb)*q8ActPairBytes)
	parallelFor(n, 8*cols, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			quantizeRowQ8(a.row(t), x[t*ldx:t*ldx+cols])
		}
	})
	return a
}

// quantizeRowQ8 writes the blocks of x (len a multiple of 32) into dst
// in the layout above.
func quantizeRowQ8(dst []byte, x []float32) {
	nb := len(x) / q8BlockSize
	if nb%2 == 1 {
		clear(dst[(nb/2)*q8ActPairBytes:])
	}
	for b := range nb {
		xs := x[b*q8BlockSize : (b+1)*q8BlockSize : (b+1)*q8BlockSize]
		pair, h := dst[(b/2)*q8ActPairBytes:(b/2+1)*q8ActPairBytes], b%2
		d, id := q8Scale(xs) // q from the unrounded d, as quantize_row_q8_0
		if h := f16Table()[f32ToF16(d)]; !math.IsInf(float64(h), 0) {
			d = h
		}
		for j := range 8 {
			var s int32
			for k := range 4 {
				q := int8(math.RoundToEven(float64(xs[4*j+k] * id)))
				pair[32*h+4*j+k] = byte(q)
				s += int32(q)
			}
			binary.LittleEndian.PutUint32(pair[64+32*h+4*j:], uint32(-128*s))
			binary.LittleEndian.PutUint32(pair[128+32*h+4*j:], math.Float32bits(d))
		}
	}
}

// q8Scale returns the scale d = max|x_i| / 127 of a block of activations
// quantized to 8 bits and 1/d (0 for a block of zeros).
func q8Scale(xs []float32) (d, id float32) {
	var amax float32
	for _, v := range xs {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	if d = amax / 127; d != 0 {
		id = 1 / d
	}
	return d, id
}

// reduceLanes sums the 16 accumulators as the kernels do: the second
// eight onto the first, then the upper four onto the lower four, then
// pairs.
func reduceLanes(a *[q8Lanes]float32) float32 {
	var v [8]float32
	for j := range v {
		v[j] = a[j] + a[8+j]
	}
	u0, u1, u2, u3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	return (u0 + u1) + (u2 + u3)
}

// fma32 is a float32 fused multiply-add a*b + c. The product of two
// float32 is exact in float64, so only the sum can round twice (to
// float64, then float32); the portable kernels accept that, the assembly
// ones use VFMADD.
func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// rowsGo is the portable rows kernel of q8Products: dot row by row.
func rowsGo(dot func(w, a []byte, units int) float32, w []byte, ldw int, a []byte, units int, out []float32) {
	for r := range out {
		out[r] = dot(w[r*ldw:(r+1)*ldw], a, units)
	}
}

// reduceQ8x12Go is the portable reduceQ8x12.
func reduceQ8x12Go(acc *[3 * 4 * q8Lanes]float32, out *[12]float32) {
	for i := range out {
		out[i] = reduceLanes((*[q8Lanes]float32)(acc[i*q8Lanes:]))
	}
}

// q8ChunkPairs is the block pairs of one tile kernel call in
// mulRowsQ8: 16 pairs (1024 columns), so that the tile's rows and a
// call's 4 inputs (12 x 1088 + 4 x 3072 bytes) stay in the L1 cache while
// the tile's other row groups and inputs reuse them; the accumulators
// carry over between calls, so chunking does not change a sum.
const q8ChunkPairs = 16

// q8Accs recycles the accumulators of mulRowsQ8's tiles.
var q8Accs = sync.Pool{New: func() any { return new([prefillTile / 3 * gemmMaxInputs / 4][3 * 4 * q8Lanes]float32) }}

// actKind is a layout of 8-bit activations: blocks of 32 in pairs
// (quantizeActs, for Q8_0) or Q8_K blocks of 256 (quantizeActsK, for the
// K-quants).
type actKind int

const (
	acts32 actKind = iota
	actsK
	numActKinds
)

// quantize returns x's n rows quantized in layout k (see quantizeActs and
// quantizeActsK).
func (k actKind) quantize(x []float32, ldx, n, cols int) *q8Acts {
	if k == actsK {
		return quantizeActsK(x, ldx, n, cols)
	}
	return quantizeActs(x, ldx, n, cols)
}

// fits reports whether rows of cols values can be quantized in layout k.
func (k actKind) fits(cols int) bool {
	if k == actsK {
		return cols%256 == 0
	}
	return cols%q8BlockSize == 0
}

// q8Products describes a weight dtype multiplied by 8-bit activations:
// its units (blocks of weights with their own scales: a Q8_0 block of 32,
// a Q4_K block of 256), the activations' layout and bytes per unit, the
// 3x4 tile kernel and the one-output kernel, both counting units.
type q8Products struct {
	acts         actKind
	unitBlocks   int // activation blocks (of 32) per unit: 1 or 8
	unitBytes    int // weight bytes per unit
	actUnitBytes int // activation bytes per unit (Q8_0: half a pair)
	tile         func(w []byte, ldw int, a []byte, lda, units int, acc *[3 * 4 * q8Lanes]float32, zero bool)
	// tileK (K-quants, instead of tile) adds one row times T <= 12
	// inputs to acc, output t at t*16 (mulRowsK).
	// On the last chunk of columns it writes the reduced outputs to
	// out[t*ldo] instead.
	tileK func(w []byte, a []byte, lda, units, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int)
	dot   func(w, a []byte, units int) float32
	// rows sets out[r] = dot(row r, a) for r < len(out), rows ldw bytes
	// apart from w: one call for a tile's rows and one input.
	rows func(w []byte, ldw int, a []byte, units int, out []float32)
}

// q8Dtypes are the matrix dtypes whose products take 8-bit activations.
var q8Dtypes = map[swarm.DType]*q8Products{
	swarm.DTypeQ8_0:   q32Q8_0.products(),
	swarm.DTypeQ4_0:   q32Q4_0.products(),
	swarm.DTypeQ4_1:   q32Q4_1.products(),
	swarm.DTypeQ5_0:   q32Q5_0.products(),
	swarm.DTypeQ5_1:   q32Q5_1.products(),
	swarm.DTypeIQ4_NL: q32IQ4_NL.products(),
	swarm.DTypeQ4_K:   {acts: actsK, unitBlocks: 8, unitBytes: q4KBlockBytes, actUnitBytes: q8KBlockBytes, tileK: q4_KTile, dot: dotQ4_KQ8K, rows: q4_KRows},
	swarm.DTypeQ2_K:   {acts: actsK, unitBlocks: 8, unitBytes: q2KBlockBytes, actUnitBytes: q8KBlockBytes, tileK: q2_KTile, dot: dotQ2_KQ8K, rows: q2_KRows},
	swarm.DTypeQ3_K:   {acts: actsK, unitBlocks: 8, unitBytes: q3KBlockBytes, actUnitBytes: q8KBlockBytes, tileK: q3_KTile, dot: dotQ3_KQ8K, rows: q3_KRows},
	swarm.DTypeQ5_K:   {acts: actsK, unitBlocks: 8, unitBytes: q5KBlockBytes, actUnitBytes: q8KBlockBytes, tileK: q5_KTile, dot: dotQ5_KQ8K, rows: q5_KRows},
	swarm.DTypeIQ4_XS: {acts: actsK, unitBlocks: 8, unitBytes: iq4XSBlockBytes, actUnitBytes: q8KBlockBytes, tileK: iq4_XSTile, dot: dotIQ4_XSQ8K, rows: iq4_XSRows},
	swarm.DTypeQ6_K:   {acts: actsK, unitBlocks: 8, unitBytes: q6KBlockBytes, actUnitBytes: q8KBlockBytes, tileK: q6_KTile, dot: dotQ6_KQ8K, rows: q6_KRows},
}

// mulRowsQ8 computes out[t*m.rows + r] = k.dot(row r, input t) for rows
// [r0, r1) of m (whose dtype k describes) and the n quantized inputs a, a
// tile of rows at a time: 3x4 groups over chunks of columns (with the
// assembly tile kernels), then one output at a time.
func (m *matrix) mulRowsQ8(out []float32, a *q8Acts, n, r0, r1 int, k *q8Products) {
	if k.tileK != nil {
		m.mulRowsK(out, a, n, r0, r1, k)
		return
	}
	rb, nb := m.rowBytes(), a.nb
	units := nb / k.unitBlocks
	var accs *[prefillTile / 3 * gemmMaxInputs / 4][3 * 4 * q8Lanes]float32
	if q8Tiles && n >= 4 {
		accs = q8Accs.Get().(*[prefillTile / 3 * gemmMaxInputs / 4][3 * 4 * q8Lanes]float32)
		defer q8Accs.Put(accs)
	}
	var sums [prefillTile / 3][12]float32
	chunkUnits := 2 * q8ChunkPairs / k.unitBlocks
	for a0 := r0; a0 < r1; a0 += prefillTile {
		b := min(a0+prefillTile, r1)
		groups := (b - a0) / 3
		nt := 0
		if accs != nil && groups > 0 {
			nt = n / 4 * 4
		}
		for t0 := 0; t0 < nt; t0 += gemmMaxInputs {
			tgroups := min(nt-t0, gemmMaxInputs) / 4
			for u0 := 0; u0 < units; u0 += chunkUnits {
				cu := min(chunkUnits, units-u0)
				aoff := u0 * k.actUnitBytes // u0 is even for Q8_0: whole pairs
				for tg := range tgroups {
					in := a.buf[(t0+4*tg)*a.stride+aoff:]
					for g := range groups {
						k.tile(m.q[(a0+3*g)*rb+u0*k.unitBytes:], rb, in, a.stride, cu, &accs[tg*groups+g], u0 == 0)
					}
				}
			}
			for tg := range tgroups {
				for g := range groups {
					reduceQ8x12(&accs[tg*groups+g], &sums[g])
				}
				// Each input's outputs together: the inputs' rows of out lie
				// m.rows floats apart, often a multiple of 4 KiB, so writing
				// them input by input keeps one line of out busy at a time.
				for tt := range 4 {
					o := out[(t0+4*tg+tt)*m.rows+a0 : (t0+4*tg+tt)*m.rows+a0+3*groups]
					for g := range groups {
						o[3*g], o[3*g+1], o[3*g+2] = sums[g][tt], sums[g][4+tt], sums[g][8+tt]
					}
				}
			}
		}
		// Rows left over after whole groups of 3 for those inputs, then
		// every row for the inputs left over.
		for r := a0 + 3*groups; r < b && nt > 0; r++ {
			for t := range nt {
				out[t*m.rows+r] = k.dot(m.q[r*rb:(r+1)*rb], a.row(t), units)
			}
		}
		for t := nt; t < n; t++ {
			k.rows(m.q[a0*rb:b*rb], rb, a.row(t), units, out[t*m.rows+a0:t*m.rows+b])
		}
	}
}
