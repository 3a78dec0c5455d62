// Package tokenizer turns text into token ids and back for Llama-family
// models: SentencePiece BPE (tokenizer.model), llama2.c tokenizer.bin, the
// tokenizer embedded in GGUF files, and Hugging Face tokenizer.json.
//
// This package must never import other packages of this repository except
// swarm/.
package tokenizer

// Tokenizer encodes and decodes text. Implementations are safe for concurrent use.
type Tokenizer interface {
	// Encode returns the ids of text; with addBOS the BOS id comes first, as
	// llama2.c's encode(text, bos=1, eos=0) does (including its dummy-prefix
	// rules for SentencePiece models).
	Encode(text string, addBOS bool) ([]int, error)
	// Decode returns the bytes that token contributes to the output text when
	// it follows prev (llama2.c rules: a leading space is dropped after BOS;
	// byte pieces <0xXX> become the raw byte). The result may be part of a
	// multi-byte UTF-8 character.
	Decode(prev, token int) string
	// BOS and EOS are the special ids.
	BOS() int
	EOS() int
	// VocabSize is the number of ids.
	VocabSize() int
}
