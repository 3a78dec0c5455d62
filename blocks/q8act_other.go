//go:build !amd64 || purego

package blocks

// eightBitActivations is false: without assembly the products keep float32
// activations (the portable twins of the 8-bit kernels are tested, not
// used).
const eightBitActivations = false

// eightBitQ32 is false: the q32 formats keep float32 activations too.
const eightBitQ32 = false

// q8Tiles is false: without assembly, mulRowsQ8 computes one output at
// a time.
const q8Tiles = false

// reduceQ8x12 writes reduceLanes of each of the 12 outputs of acc to out.
func reduceQ8x12(acc *[3 * 4 * q8Lanes]float32, out *[12]float32) { reduceQ8x12Go(acc, out) }

// q4_KTile is the portable tile (used by the tests).
func q4_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q4_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q4_KRows is the rows kernel of q8Products.
func q4_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	rowsGo(q4_KDotGo, w, ldw, a, nsb, out)
}

// q6_KTile is the portable tile (used by the tests).
func q6_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q6_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q6_KRows is the rows kernel of q8Products.
func q6_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	rowsGo(q6_KDotGo, w, ldw, a, nsb, out)
}

// iq4_XSTile and iq4_XSRows are the portable IQ4_XS kernels (used by the
// tests).
func iq4_XSTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(iq4_XSLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

func iq4_XSRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	rowsGo(iq4_XSDotGo, w, ldw, a, nsb, out)
}

// q5_KTile and q5_KRows are the portable Q5_K kernels (used by the tests).
func q5_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q5_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

func q5_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	rowsGo(q5_KDotGo, w, ldw, a, nsb, out)
}

// q3_KTile and q3_KRows are the portable Q3_K kernels (used by the tests).
func q3_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q3_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

func q3_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	rowsGo(q3_KDotGo, w, ldw, a, nsb, out)
}

// q2_KTile and q2_KRows are the portable Q2_K kernels (used by the tests).
func q2_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q2_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

func q2_KRows(w []byte, ldw int, a []byte, nsb int, out []float32) {
	rowsGo(q2_KDotGo, w, ldw, a, nsb, out)
}

// tile, row and rows are the portable q32 kernels (used by the tests).
func (f q32) tile(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	f.tileGo(w, ldw, a, lda, nb, acc, zero)
}

func (f q32) row(w, a []byte, nb int, acc *[q8Lanes]float32) { f.lanes(w, a, nb, acc) }

func (f q32) rows(w []byte, ldw int, a []byte, nb int, out []float32) {
	rowsGo(f.dot, w, ldw, a, nb, out)
}
