package blocks

import (
	"encoding/binary"
	"math"
	"sync"
)

// Activations quantized to 8 bits for the K-quant weights, as llama.cpp
// quantizes the inputs of its Q4_K and Q6_K products (ggml-quants.c
// quantize_row_q8_K, block_q8_K): one scale per block of 256 values, d =
// max|x_i| / 127, q_i = round(x_i / d) in [-127, 127] (ties to even), and
// the sums of each 16 q_i. A K-quant block then dots with an input block
// in integers, its 6-bit (Q4_K) or 8-bit (Q6_K) group scales included,
// exact in int32, and only d_w * d_x is float32: one float32 step per
// block of 256 weights instead of one per group of 32 (q8act.go).
//
// Layout of one block of an input row, q8KBlockBytes:
//
//	bytes   0..255  q_i as int8
//	bytes 256..287  bsums_g = q_16g + ... + q_16g+15, int16, g < 16
//	bytes 288..291  d as float32 (llama.cpp's block_q8_K also keeps
//	                float32)
//	bytes 292..319  zero
const q8KBlockBytes = 320

// quantizeActsK quantizes the n rows x[t*ldx : t*ldx+cols] (cols a
// multiple of 256) into pooled Q8_K blocks; call release when done.
func quantizeActsK(x []float32, ldx, n, cols int) *q8Acts {
	nsb := cols / 256
	rowBytes := nsb * q8KBlockBytes
	stride := rowBytes
	if stride%4096 == 0 {
		stride += 64 // keep rows of inputs off the same L1 sets
	}
	a := newQ8Acts(n, cols/q8BlockSize, stride, rowBytes)
	parallelFor(n, 8*cols, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			quantizeRowQ8K(a.row(t), x[t*ldx:t*ldx+cols])
		}
	})
	return a
}

// quantizeRowQ8K writes the blocks of x (len a multiple of 256) into dst
// in the layout above.
func quantizeRowQ8K(dst []byte, x []float32) {
	for S := range len(x) / 256 {
		xs := x[S*256 : (S+1)*256 : (S+1)*256]
		blk := dst[S*q8KBlockBytes : (S+1)*q8KBlockBytes : (S+1)*q8KBlockBytes]
		d, id := q8Scale(xs)
		for g := range 16 {
			var s int32
			for i := 16 * g; i < 16*g+16; i++ {
				q := int8(math.RoundToEven(float64(xs[i] * id)))
				blk[i] = byte(q)
				s += int32(q)
			}
			binary.LittleEndian.PutUint16(blk[256+2*g:], uint16(int16(s)))
		}
		binary.LittleEndian.PutUint32(blk[288:], math.Float32bits(d))
		clear(blk[292:])
	}
}

// q8KBlock returns the q, the 16 group sums and d of Q8_K block blk.
func q8KBlock(blk []byte) (q []byte, bsums [16]int32, d float32) {
	for g := range bsums {
		bsums[g] = int32(int16(binary.LittleEndian.Uint16(blk[256+2*g:])))
	}
	return blk[:256], bsums, math.Float32frombits(binary.LittleEndian.Uint32(blk[288:]))
}

// kTileInputs is the most inputs one K-quant tile kernel (q4_KTile,
// q6_KTile) takes: a row's scales are unpacked once per block for all of
// them, and 12 integer sums and 12 accumulators fill the AVX-512
// registers.
const kTileInputs = 12

// kChunkUnits is the blocks of 256 of one tile kernel call in mulRowsK:
// 1024 columns, so that a group's 12 inputs (15 KiB) and the row tile's
// weights stay in the L1 cache while every row of the tile reads them;
// the accumulators carry over between calls, so chunking does not change
// a sum.
const kChunkUnits = 4

// kRowTile is the rows of a row tile of mulRowsK: the rows read one
// chunk of a group's inputs while it is in the L1 cache, and each input's
// outputs of a tile are written together (32 floats, two cache lines).
const kRowTile = 32

// kAccs recycles the accumulators of mulRowsK's tiles: per row of a row
// tile and per input group.
type kAccSet [kRowTile][(gemmMaxInputs + kTileInputs - 1) / kTileInputs][3 * 4 * q8Lanes]float32

var kAccs = sync.Pool{New: func() any { return new(kAccSet) }}

// mulRowsK computes out[t*m.rows + r] = k.dot(row r, input t) for rows
// [r0, r1) of the K-quant matrix m and the n Q8_K inputs a: one input
// through the rows kernel; more inputs in groups of at most 12 (sizes
// balanced, 64 inputs at a time) through the tile kernel, one row at a
// time, over chunks of columns. Every path does an output's operations in
// the same order, so the results are bit-identical to k.dot's.
func (m *matrix) mulRowsK(out []float32, a *q8Acts, n, r0, r1 int, k *q8Products) {
	rb, units := m.rowBytes(), a.nb/k.unitBlocks
	if !q8Tiles || n == 1 {
		for t := range n {
			k.rows(m.q[r0*rb:r1*rb], rb, a.row(t), units, out[t*m.rows+r0:t*m.rows+r1])
		}
		return
	}
	accs := kAccs.Get().(*kAccSet)
	defer kAccs.Put(accs)
	for a0 := r0; a0 < r1; a0 += kRowTile {
		b := min(a0+kRowTile, r1)
		for t0 := 0; t0 < n; t0 += gemmMaxInputs {
			nt := min(n-t0, gemmMaxInputs)
			groups := (nt + kTileInputs - 1) / kTileInputs
			group := func(g int) (int, int) { return t0 + nt*g/groups, t0 + nt*(g+1)/groups }
			for u0 := 0; u0 < units; u0 += kChunkUnits {
				cu := min(kChunkUnits, units-u0)
				last := u0+cu == units
				for g := range groups {
					g0, g1 := group(g)
					in := a.buf[g0*a.stride+u0*q8KBlockBytes:]
					for r := a0; r < b; r++ {
						var o []float32
						if last {
							o = out[g0*m.rows+r : (g1-1)*m.rows+r+1]
						}
						k.tileK(m.q[r*rb+u0*k.unitBytes:(r+1)*rb], in, a.stride, cu, g1-g0, &accs[r-a0][g], u0 == 0, o, m.rows)
					}
				}
			}
		}
	}
}
