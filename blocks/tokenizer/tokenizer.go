// Package tokenizer turns text into token ids and back: SentencePiece BPE
// (tokenizer.model, llama2.c tokenizer.bin, GGUF "llama", Llama-2-style
// tokenizer.json) and byte-level BPE (Llama 3, Qwen2/Qwen3 tokenizer.json
// and GGUF "gpt2"), plus Gemma 3's SentencePiece-style tokenizer.json.
//
// tokenizer.model, tokenizer.bin and GGUF "llama" load into one *BPE whose
// Encode follows llama2.c's encode (run.c,
// https://github.com/karpathy/llama2.c): BOS, dummy-prefix space,
// per-character lookup with byte fallback, then greedy best-score pair
// merges. Byte-level files (tokenizer.json, GGUF "gpt2") and Gemma 3's
// tokenizer.json load into a *RankedBPE, which runs Hugging Face
// tokenizers' pipeline (added tokens, normalizer, pre-tokenizer with
// look-ahead regular expressions, merges by rank) and gives the ids of
// transformers.js; both share one merge loop (mergeSymbols). Llama-2-style
// tokenizer.json files run with github.com/sugarme/tokenizer (LoadHF).
// Load picks the loader from a path.
//
// This package must never import other packages of this repository except
// swarm/.
package tokenizer

import (
	"errors"
	"strings"
)

// Tokenizer encodes and decodes text. Implementations are safe for concurrent use.
type Tokenizer interface {
	// Encode returns the ids of text; with addBOS the special tokens the
	// model puts around a text come with them: BOS first, as llama2.c's
	// encode(text, bos=1, eos=0) does (including its dummy-prefix rules for
	// SentencePiece models) and as transformers' encode(text) does for
	// tokenizer.json models (nothing for Qwen, which has no BOS).
	Encode(text string, addBOS bool) ([]int, error)
	// Decode returns the bytes that token contributes to the output text when
	// it follows prev (llama2.c rules: a leading space is dropped after BOS;
	// byte pieces <0xXX> become the raw byte; a byte-level token gives the
	// bytes it stands for). The result may be part of a multi-byte UTF-8
	// character, which the following tokens complete: concatenated in order,
	// the results are the text, byte for byte. A streaming client holds
	// back an incomplete character at the end (as ingress's stopper does).
	// SentencePiece control pieces give ""; a RankedBPE's added tokens (BOS,
	// <|eot_id|>, ...) give their text.
	Decode(prev, token int) string
	// BOS and EOS are the special ids; a RankedBPE gives -1 for one its
	// model lacks.
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
	// cannot run (a unigram SentencePiece model, a tokenizer.json component
	// or a GGUF tokenizer.ggml.pre it does not implement).
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

// DecodeAll concatenates t.Decode over ids, each following the one before
// it (the first follows -1, i.e. nothing).
func DecodeAll(t Tokenizer, ids []int) string {
	var b strings.Builder
	prev := -1
	for _, id := range ids {
		b.WriteString(t.Decode(prev, id))
		prev = id
	}
	return b.String()
}
