package synth

import "fmt"

// The synthesized vocabulary is llama2.c/Llama 2 shaped: id 0 <unk>, 1 BOS
// <s>, 2 EOS </s>, ids 3..258 the byte pieces <0x00>..<0xFF>, then the
// printable ASCII characters (space spelled U+2581 "▁", as SentencePiece
// does), then strings of 2, 3, 4... characters over a small alphabet, each
// one merge of a shorter piece and one character, so every piece is
// reachable by BPE merges. Longer pieces score lower (merge later).
const (
	unkID    = 0
	bosID    = 1
	eosID    = 2
	minVocab = 3 + 256
)

// SentencePiece piece types (sentencepiece_model.proto, GGUF token_type).
const (
	typeNormal  int32 = 1
	typeUnknown int32 = 2
	typeControl int32 = 3
	typeByte    int32 = 6
)

// mergeAlphabet is the alphabet of the multi-character pieces, most
// frequent English letters first.
const mergeAlphabet = "▁etaoinshrdlcumwfgypbvkjxqz"

// Vocab returns the pieces (U+2581 for space), merge scores and
// SentencePiece types of a vocabulary of n >= 259 ids.
func Vocab(n int) (pieces []string, scores []float32, types []int32, err error) {
	if n < minVocab {
		return nil, nil, nil, fmt.Errorf("%w: vocab = %d, want >= %d", ErrConfig, n, minVocab)
	}
	pieces = make([]string, 0, n)
	scores = make([]float32, 0, n)
	types = make([]int32, 0, n)
	add := func(p string, s float32, t int32) bool {
		if len(pieces) == n {
			return false
		}
		pieces, scores, types = append(pieces, p), append(scores, s), append(types, t)
		return true
	}
	add("<unk>", 0, typeUnknown)
	add("<s>", 0, typeControl)
	add("</s>", 0, typeControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 0, typeByte)
	}
	add("▁", -1, typeNormal)
	for c := byte('!'); c <= '~'; c++ {
		if !add(string(c), -1, typeNormal) {
			return pieces, scores, types, nil
		}
	}
	alpha := []rune(mergeAlphabet)
	prev := []string{""}
	for length := 1; len(pieces) < n; length++ {
		var next []string
		for _, p := range prev {
			for _, r := range alpha {
				next = append(next, p+string(r))
			}
		}
		if length >= 2 {
			for _, p := range next {
				if !add(p, -float32(len(pieces)), typeNormal) {
					break
				}
			}
		}
		prev = next
	}
	return pieces, scores, types, nil
}
