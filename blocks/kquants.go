package blocks

// kLanesFunc adds to acc the 16 accumulators of a K-quant row w times the
// Q8_K input a over nsb blocks of 256 (q2_KLanes .. q6_KLanes).
type kLanesFunc func(w, a []byte, nsb int, acc *[q8Lanes]float32)

// kTileGo is the portable tile kernel of a K-quant (q4_KTile's contract):
// lanes per output t < T, input t at a[t*lda:], into acc (zero: from
// zeros), or their reduceLanes into out[t*ldo] when out is not empty.
func kTileGo(lanes kLanesFunc, w []byte, a []byte, lda, nsb, T int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int) {
	if zero {
		clear(acc[:])
	}
	for t := range T {
		lanes(w, a[t*lda:], nsb, (*[q8Lanes]float32)(acc[t*q8Lanes:]))
		if len(out) > 0 {
			out[t*ldo] = reduceLanes((*[q8Lanes]float32)(acc[t*q8Lanes:]))
		}
	}
}

// kDotGo is the portable product of a K-quant row w with the Q8_K input
// a: reduceLanes of lanes from zero.
func kDotGo(lanes kLanesFunc, w, a []byte, nsb int) float32 {
	var acc [q8Lanes]float32
	lanes(w, a, nsb, &acc)
	return reduceLanes(&acc)
}
