//go:build !amd64 || purego

package blocks

// eightBitActivations is false: without assembly the products keep float32
// activations (the portable twins of the 8-bit kernels are tested, not
// used).
const eightBitActivations = false

// q8Tiles is false: without assembly, mulRowsQ8 computes one output at
// a time.
const q8Tiles = false

// q8_0Tile3x4 is the portable tile (used by the tests).
func q8_0Tile3x4(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	q8_0Tile3x4Go(w, ldw, a, lda, nb, acc, zero)
}

// q8_0Row adds to acc the accumulators of row w times input a.
func q8_0Row(w, a []byte, nb int, acc *[q8Lanes]float32) { q8_0Lanes(w, a, nb, acc) }

// reduceQ8x12 writes reduceLanes of each of the 12 outputs of acc to out.
func reduceQ8x12(acc *[3 * 4 * q8Lanes]float32, out *[12]float32) { reduceQ8x12Go(acc, out) }

// q4_KTile is the portable tile (used by the tests).
func q4_KTile(w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	kTileGo(q4_KLanes, w, a, lda, nsb, T, acc, zero, out, ldo)
}

// q8_0Rows and q4_KRows are the rows kernels of q8Products.
func q8_0Rows(w []byte, ldw int, a []byte, nb int, out []float32) {
	rowsGo(dotQ8_0Q8, w, ldw, a, nb, out)
}

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

// q4_0Tile3x4, q4_0Row and q4_0Rows are the portable Q4_0 kernels (used
// by the tests).
func q4_0Tile3x4(w []byte, ldw int, a []byte, lda, nb int, acc *[3 * 4 * q8Lanes]float32, zero bool) {
	q4_0Tile3x4Go(w, ldw, a, lda, nb, acc, zero)
}

func q4_0Row(w, a []byte, nb int, acc *[q8Lanes]float32) { q4_0Lanes(w, a, nb, acc) }

func q4_0Rows(w []byte, ldw int, a []byte, nb int, out []float32) {
	rowsGo(dotQ4_0Q8, w, ldw, a, nb, out)
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
