// Package tokenizer turns text into token ids and back for Llama-family
// models: SentencePiece BPE (tokenizer.model), llama2.c tokenizer.bin, the
// tokenizer embedded in GGUF files, and Hugging Face tokenizer.json.
//
// All SentencePiece-style sources load into one *BPE whose Encode follows
// llama2.c's encode (run.c, https://github.com/karpathy/llama2.c): BOS,
// dummy-prefix space, per-character lookup with byte fallback, then greedy
// best-score pair merges. Load picks the loader from a path.
//
// This package must never import other packages of this repository except
// swarm/.
package tokenizer

import "errors"

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

// Sentinel errors callers can test with errors.Is.
var (
	// ErrFormat marks a tokenizer file or vocabulary that is malformed or
	// truncated; the wrapping message names the file and what was expected.
	ErrFormat = errors.New("tokenizer: bad tokenizer file")
	// ErrUnsupported marks a well-formed tokenizer of a kind this package
	// cannot run (a GPT-2 byte-level BPE in GGUF, a unigram SentencePiece
	// model, a Llama-3-style tokenizer.json).
	ErrUnsupported = errors.New("tokenizer: unsupported tokenizer")
	// ErrEncode marks text that cannot be encoded: a character that is not in
	// the vocabulary when there are neither byte pieces nor an unknown piece.
	ErrEncode = errors.New("tokenizer: cannot encode")
)

// Piece types, numbered as SentencePiece's ModelProto.SentencePiece.Type
// (https://github.com/google/sentencepiece/blob/master/src/sentencepiece_model.proto)
// and as GGUF's tokenizer.ggml.token_type (llama.cpp llama_token_type).
const (
	TypeNormal      int32 = 1 // an ordinary piece: text, mergeable
	TypeUnknown     int32 = 2 // the <unk> piece
	TypeControl     int32 = 3 // BOS, EOS, padding: never produced from text, decodes to ""
	TypeUserDefined int32 = 4 // treated as TypeNormal here
	TypeUnused      int32 = 5 // never produced from text
	TypeByte        int32 = 6 // <0xXX>: one raw byte, the byte fallback
)
