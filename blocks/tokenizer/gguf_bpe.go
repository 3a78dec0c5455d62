package tokenizer

import (
	"fmt"
	"sort"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
	"golang.org/x/text/unicode/norm"
)

// GGUF metadata keys of a byte-level BPE tokenizer
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, "Tokenizer").
const (
	ggufMerges = "tokenizer.ggml.merges"
	ggufPre    = "tokenizer.ggml.pre"
	ggufAddBOS = "tokenizer.ggml.add_bos_token"
	ggufAddEOS = "tokenizer.ggml.add_eos_token"
	ggufEOT    = "tokenizer.ggml.eot_token_id"
	ggufEOM    = "tokenizer.ggml.eom_token_id"
	ggufFIMPad = "tokenizer.ggml.fim_pad_token_id"
	ggufFIMRep = "tokenizer.ggml.fim_rep_token_id"
	ggufFIMSep = "tokenizer.ggml.fim_sep_token_id"
)

// ggufPreTokenizer is how llama.cpp pre-tokenizes for one value of
// tokenizer.ggml.pre (llama-vocab.cpp), with what the model's tokenizer.json
// adds.
type ggufPreTokenizer struct {
	pattern      string // the Split pattern, before the byte-level spelling
	ignoreMerges bool   // a word in the vocabulary is one token
	addBOS       bool   // add_bos_token's default
	nfc          bool   // the tokenizer.json's NFC normalizer (llama.cpp skips it)
}

// ggufPreTokenizers are the tokenizer.ggml.pre values this package runs:
// GPT-2, Llama 3 (and the models llama.cpp files under it) and Qwen2/Qwen3.
// Others give ErrUnsupported rather than llama.cpp's degraded "default".
var ggufPreTokenizers = map[string]ggufPreTokenizer{
	"gpt-2":            {pattern: gpt2Pattern},
	"llama3":           {pattern: llama3Pattern, ignoreMerges: true, addBOS: true},
	"llama-v3":         {pattern: llama3Pattern, ignoreMerges: true, addBOS: true},
	"llama-bpe":        {pattern: llama3Pattern, ignoreMerges: true, addBOS: true},
	"qwen2":            {pattern: qwen2Pattern, nfc: true},
	"deepseek-r1-qwen": {pattern: qwen2Pattern, nfc: true},
}

// rankedFromGGUF reads a tokenizer.ggml.model "gpt2" tokenizer: tokens
// (byte-level spellings) and merges ("a b", by rank) are required; token_type
// (default: all normal) makes control and user-defined tokens added tokens,
// matched in the text first and decoded verbatim; tokenizer.ggml.pre picks
// the pre-tokenizer (ggufPreTokenizers); bos/eos/eot/eom_token_id and
// fim_pad/fim_rep/fim_sep_token_id (default none) name the special tokens
// (RankedBPE.EndOfGeneration), add_bos_token (default per pre, true for
// Llama 3) and add_eos_token (default false) whether Encode with addBOS
// puts them around the text.
func rankedFromGGUF(f *gguf.GGUFFile, path string) (*RankedBPE, error) {
	kvs := f.Header.MetadataKV
	tokens, err := ggufStringList(f, path, ggufTokens)
	if err != nil {
		return nil, err
	}
	lines, err := ggufStringList(f, path, ggufMerges)
	if err != nil {
		return nil, err
	}
	merges := make([][2]string, len(lines))
	for i, l := range lines {
		var ok bool
		if merges[i], ok = splitMerge(l); !ok {
			return nil, fmt.Errorf("%w: %s item %d %q: want two tokens separated by a space", ErrFormat, ggufMerges, i, l)
		}
	}
	types, err := ggufArray(kvs, ggufTokenType, gguf.GGUFMetadataValueTypeInt32, false, (gguf.GGUFMetadataKVArrayValue).ValuesInt32)
	if err != nil {
		return nil, err
	}
	if types != nil && len(types) != len(tokens) {
		return nil, fmt.Errorf("%w: %d token types for %d tokens", ErrFormat, len(types), len(tokens))
	}
	pre := "gpt-2"
	if _, ok := kvs.Get(ggufPre); ok {
		if pre, err = ggufString(kvs, ggufPre); err != nil {
			return nil, err
		}
	}
	p, ok := ggufPreTokenizers[pre]
	if !ok {
		known := make([]string, 0, len(ggufPreTokenizers))
		for k := range ggufPreTokenizers {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("%w: %s %q (this package runs %s)", ErrUnsupported, ggufPre, pre, strings.Join(known, ", "))
	}
	split, err := regexPattern(p.pattern)
	if err != nil {
		return nil, err
	}
	byteLevel, err := newByteLevelPre(false, false)
	if err != nil {
		return nil, err
	}
	s := rankedSpec{
		tokens:       tokens,
		merges:       merges,
		ignoreMerges: p.ignoreMerges,
		pre:          preSequence{splitPre{pat: split, behavior: splitIsolated}, byteLevel},
		decode: func(tok string) string {
			if b, ok := fromByteLevel(tok); ok {
				return b
			}
			return tok
		},
		decodeAdded: func(content string) string { return content },
	}
	if p.nfc {
		s.normalize = norm.NFC.String
	}
	for id, typ := range types {
		if typ == TypeControl || typ == TypeUserDefined {
			s.added = append(s.added, addedToken{id: id, content: tokens[id], control: typ == TypeControl})
		}
	}
	for _, id := range []struct {
		key string
		to  *int
	}{{ggufBOS, &s.bos}, {ggufEOS, &s.eos}, {ggufEOT, &s.eot}} {
		if *id.to, err = ggufInt(kvs, id.key, -1); err != nil {
			return nil, err
		}
		if *id.to >= len(tokens) {
			return nil, fmt.Errorf("%w: metadata %s is %d, outside the %d tokens", ErrFormat, id.key, *id.to, len(tokens))
		}
	}
	s.fim = []int{-1, -1, -1}
	eom := -1
	for _, id := range []struct {
		key string
		to  *int
	}{{ggufEOM, &eom}, {ggufFIMPad, &s.fim[0]}, {ggufFIMRep, &s.fim[1]}, {ggufFIMSep, &s.fim[2]}} {
		if *id.to, err = ggufInt(kvs, id.key, -1); err != nil {
			return nil, err
		}
		if *id.to >= len(tokens) {
			return nil, fmt.Errorf("%w: metadata %s is %d, outside the %d tokens", ErrFormat, id.key, *id.to, len(tokens))
		}
	}
	if eom >= 0 {
		s.eog = []int{eom}
	}
	addBOS, err := ggufBool(kvs, ggufAddBOS, p.addBOS)
	if err != nil {
		return nil, err
	}
	addEOS, err := ggufBool(kvs, ggufAddEOS, false)
	if err != nil {
		return nil, err
	}
	if addBOS && s.bos >= 0 {
		s.prefix = []int{s.bos}
	}
	if addEOS && s.eos >= 0 {
		s.suffix = []int{s.eos}
	}
	return newRankedBPE(s)
}
