package tokenizer

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RankedBPE is a byte-pair-encoding tokenizer whose merges apply by rank, the
// BPE model of Hugging Face tokenizers (tokenizer.json "model": {"type":
// "BPE"}), of GPT-2 and of GGUF's tokenizer.ggml.model "gpt2": Llama 3,
// Qwen2 and Qwen3 (byte-level: every byte of the text is a character of
// GPT-2's alphabet, so nothing is unknown) and Gemma 3 (SentencePiece-style:
// "▁" for space, byte fallback). It is immutable after construction and
// safe for concurrent use.
//
// Encode runs the pipeline of Hugging Face tokenizers, as transformers.js
// does:
//
//  1. added tokens (special or not) are matched in the raw text first,
//     leftmost-longest; each is its own id, and an lstrip/rstrip token eats
//     the whitespace before/after it;
//  2. each stretch of text between them is normalized (NFC; Replace;
//     Prepend), then split into words by the pre-tokenizer (Split with a
//     look-ahead regular expression; ByteLevel, which spells the bytes in
//     GPT-2's alphabet);
//  3. each word is one id if it is in the vocabulary and ignore_merges is
//     set, else its characters are merged pairwise, always the adjacent
//     pair whose merge has the lowest rank (the leftmost among equals),
//     until no pair merges; a character outside the vocabulary becomes its
//     UTF-8 bytes as <0xXX> tokens (byte_fallback) or the unknown token;
//  4. with addBOS, the special tokens the post-processor puts around a
//     single text (BOS for Llama-2-like and Gemma, nothing for Qwen).
//
// Decode gives every id its text on its own: byte-level tokens their bytes
// (possibly part of a UTF-8 character: the next token completes it), byte
// fallback tokens their byte, "▁" a space, added tokens (BOS, <|eot_id|>,
// ...) their content, as transformers' decode(ids) without
// skip_special_tokens. So the concatenation of Decode over Encode(text,
// false) is text, byte for byte.
type RankedBPE struct {
	vocab        map[string]int        // model and added tokens, by stored text
	decoded      []string              // by id: what Decode emits
	merges       map[uint64]rankedPair // left<<32 | right -> merge
	byteIDs      [256]int              // <0xXX> ids for byte fallback, -1 when absent
	byteFallback bool
	ignoreMerges bool
	fuseUnk      bool
	unk          int // -1 when there is no unknown token
	added        addedTokens
	normalize    func(string) string // nil: none
	pre          preTokenizer        // nil: the whole text is one word
	prefix       []int               // what addBOS puts before the text
	suffix       []int               // and after it
	stripAfter   int                 // leading spaces Decode drops after BOS (a Strip decoder)
	bos, eos     int                 // -1 when there is none
	eot          int                 // end-of-turn id, -1 when unknown
	eog          []int               // ids that end a generation, ascending (EndOfGeneration)
}

var _ Tokenizer = (*RankedBPE)(nil)

// rankedPair is one merge: the pair with rank 0 merges first.
type rankedPair struct{ rank, id int32 }

// rankedSpec is what the loaders (tokenizer.json, GGUF) hand to
// newRankedBPE.
type rankedSpec struct {
	tokens       []string    // by id: the model's token text as stored; "" for ids only added tokens use
	merges       [][2]string // by rank
	added        []addedToken
	unk          string // "" for none
	byteFallback bool
	ignoreMerges bool
	fuseUnk      bool
	normalize    func(string) string
	pre          preTokenizer
	// decode gives the text of a model token (not of an added token).
	decode func(token string) string
	// decodeAdded gives the text of an added token: its content, or that
	// content through the decoder's Replace steps.
	decodeAdded    func(content string) string
	stripAfter     int
	prefix, suffix []int // ids of the special tokens around a text
	bos, eos       int   // -1 for none
	eot            int   // -1: the first of endOfTurnTokens in the vocabulary
	// eog are further ids that end a generation: GGUF's eom_token_id, the
	// eos_token_id of generation_config.json and config.json.
	eog []int
	// fim are GGUF's fim_pad, fim_rep and fim_sep token ids (-1, or nil:
	// found by text, see fimEndTokens).
	fim []int
}

// addedToken is one entry of tokenizer.json's added_tokens (or a GGUF
// control or user-defined token).
type addedToken struct {
	id      int
	content string
	lstrip  bool // whitespace before the token is dropped
	rstrip  bool // whitespace after it is dropped
	// control marks a control token (GGUF token_type 3; a tokenizer.json
	// added token that is special or looks special, as llama.cpp's
	// convert_hf_to_gguf.py classifies them): only those end a
	// generation by their text (RankedBPE.EndOfGeneration).
	control bool
}

// newRankedBPE checks and indexes a spec. Errors are ErrFormat: a merge of
// tokens that are not in the vocabulary or whose concatenation is not, an
// added token or special token id out of range.
func newRankedBPE(s rankedSpec) (*RankedBPE, error) {
	n := len(s.tokens)
	for _, a := range s.added {
		if a.id < 0 || a.id > 1<<30 {
			return nil, fmt.Errorf("%w: added token %q has id %d", ErrFormat, a.content, a.id)
		}
		n = max(n, a.id+1)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty vocabulary", ErrFormat)
	}
	if len(s.merges) >= 1<<31-1 {
		return nil, fmt.Errorf("%w: %d merges", ErrFormat, len(s.merges))
	}
	t := &RankedBPE{
		vocab:        make(map[string]int, n),
		decoded:      make([]string, n),
		merges:       make(map[uint64]rankedPair, len(s.merges)),
		byteFallback: s.byteFallback,
		ignoreMerges: s.ignoreMerges,
		fuseUnk:      s.fuseUnk,
		normalize:    s.normalize,
		pre:          s.pre,
		stripAfter:   s.stripAfter,
	}
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	for id, tok := range s.tokens {
		if tok == "" {
			continue
		}
		if _, dup := t.vocab[tok]; !dup {
			t.vocab[tok] = id
		}
		t.decoded[id] = s.decode(tok)
		if b, ok := parseBytePiece(tok); ok && t.byteIDs[b] < 0 {
			t.byteIDs[b] = id
		}
	}
	for rank, m := range s.merges {
		a, aok := t.vocab[m[0]]
		b, bok := t.vocab[m[1]]
		id, idok := t.vocab[m[0]+m[1]]
		if !aok || !bok || !idok {
			return nil, fmt.Errorf("%w: merge %d %q + %q: a part or the result is not in the vocabulary", ErrFormat, rank, m[0], m[1])
		}
		key := uint64(a)<<32 | uint64(b)
		if _, dup := t.merges[key]; !dup {
			t.merges[key] = rankedPair{rank: int32(rank), id: int32(id)}
		}
	}
	// Added tokens come after the model's own: they win a shared text, as
	// in transformers.js.
	for _, a := range s.added {
		t.vocab[a.content] = a.id
		t.decoded[a.id] = s.decodeAdded(a.content)
	}
	t.added = newAddedTokens(s.added)
	if t.unk = -1; s.unk != "" {
		var ok bool
		if t.unk, ok = t.vocab[s.unk]; !ok {
			return nil, fmt.Errorf("%w: unk_token %q is not in the vocabulary", ErrFormat, s.unk)
		}
	}
	for _, id := range slices.Concat([]int{s.bos, s.eos, s.eot}, s.prefix, s.suffix, s.eog, s.fim) {
		if id < -1 || id >= n {
			return nil, fmt.Errorf("%w: special token id %d outside the vocabulary [0, %d)", ErrFormat, id, n)
		}
	}
	t.bos, t.eos, t.eot = s.bos, s.eos, s.eot
	t.prefix, t.suffix = s.prefix, s.suffix
	for _, c := range endOfTurnTokens {
		if id, ok := t.vocab[c]; ok && t.eot < 0 {
			t.eot = id
		}
	}
	t.eog = t.endOfGeneration(s.fim, s.eog)
	return t, nil
}

// endOfTurnTokens are texts that llama.cpp takes for the end of a chat turn
// when a GGUF names no eot_token_id (a subset: "<|endoftext|>", which ends
// a document for Qwen, is left out); the first one present is EOT.
var endOfTurnTokens = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"}

// BOS is the beginning-of-sequence id, -1 when the model has none (Qwen).
func (t *RankedBPE) BOS() int { return t.bos }

// EOS is the end-of-sequence id (tokenizer_config.json's eos_token, GGUF's
// eos_token_id), -1 when unknown.
func (t *RankedBPE) EOS() int { return t.eos }

// EOT is the end-of-turn id (<|eot_id|>, <|im_end|>, <end_of_turn>, or
// GGUF's eot_token_id), -1 when unknown.
func (t *RankedBPE) EOT() int { return t.eot }

// VocabSize is the number of ids, added tokens included.
func (t *RankedBPE) VocabSize() int { return len(t.decoded) }

// Piece returns the text of id as Decode gives it, "" out of range.
func (t *RankedBPE) Piece(id int) string { return t.Decode(-1, id) }

// Decode returns the text id contributes (see RankedBPE); a decoder's
// Strip drops leading spaces after BOS. Out of range ids give "".
func (t *RankedBPE) Decode(prev, token int) string {
	if token < 0 || token >= len(t.decoded) {
		return ""
	}
	s := t.decoded[token]
	if t.stripAfter > 0 && prev >= 0 && prev == t.bos {
		for i := 0; i < t.stripAfter && strings.HasPrefix(s, " "); i++ {
			s = s[1:]
		}
	}
	return s
}

// Encode returns the ids of text (see RankedBPE), with the special tokens
// of the post-processor around them when addBOS. It fails with ErrEncode
// only for a character that is neither in the vocabulary nor coverable by
// byte tokens when there is no unknown token.
func (t *RankedBPE) Encode(text string, addBOS bool) ([]int, error) {
	out := make([]int, 0, len(text)/3+4)
	if addBOS {
		out = append(out, t.prefix...)
	}
	var (
		words []string
		err   error
	)
	for _, sec := range t.added.split(text) {
		if sec.id >= 0 {
			out = append(out, sec.id)
			continue
		}
		s := sec.text
		if t.normalize != nil {
			s = t.normalize(s)
		}
		if s == "" {
			continue
		}
		words = words[:0]
		if t.pre == nil {
			words = append(words, s)
		} else if words, err = t.pre.split(words, s); err != nil {
			return nil, err
		}
		for _, w := range words {
			if out, err = t.encodeWord(out, w); err != nil {
				return nil, err
			}
		}
	}
	if addBOS {
		out = append(out, t.suffix...)
	}
	return out, nil
}

// encodeWord appends the ids of one word. Characters outside the
// vocabulary enter the merge as symbols with id -2-offset (offset: their
// byte offset in w), which never merge, and are expanded afterwards, as
// transformers.js does.
func (t *RankedBPE) encodeWord(out []int, w string) ([]int, error) {
	if w == "" {
		return out, nil
	}
	if t.ignoreMerges {
		if id, ok := t.vocab[w]; ok {
			return append(out, id), nil
		}
	}
	syms := make([]symbol, 0, len(w))
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		id, ok := t.vocab[w[i:i+size]]
		if !ok {
			id = -2 - i
		}
		n := len(syms)
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1})
		i += size
	}
	syms[len(syms)-1].next = -1
	mergeSymbols(syms, t.pair)
	lastUnk := false
	for i := 0; i >= 0; i = syms[i].next {
		id := syms[i].id
		if id >= 0 {
			out, lastUnk = append(out, id), false
			continue
		}
		off := -2 - id
		_, size := utf8.DecodeRuneInString(w[off:])
		if ids, ok := t.fallback(w[off : off+size]); ok {
			out, lastUnk = append(out, ids...), false
			continue
		}
		if t.unk < 0 {
			return nil, fmt.Errorf("%w: %q is not in the vocabulary and there are neither byte tokens nor an unknown token", ErrEncode, w[off:off+size])
		}
		if !lastUnk || !t.fuseUnk {
			out = append(out, t.unk)
		}
		lastUnk = true
	}
	return out, nil
}

// fallback returns the <0xXX> ids of the bytes of s, when byte_fallback is
// on and the vocabulary has all of them.
func (t *RankedBPE) fallback(s string) ([]int, bool) {
	if !t.byteFallback {
		return nil, false
	}
	ids := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		if ids[i] = t.byteIDs[s[i]]; ids[i] < 0 {
			return nil, false
		}
	}
	return ids, true
}

// pair is RankedBPE's merge rule for mergeSymbols: the lowest rank first.
func (t *RankedBPE) pair(a, b int) (int, float64, bool) {
	m, ok := t.merges[uint64(a)<<32|uint64(b)]
	return int(m.id), -float64(m.rank), ok
}

// addedTokens finds added tokens in raw text, leftmost-longest (as Hugging
// Face tokenizers' Aho-Corasick matcher and transformers.js's trie do).
type addedTokens struct {
	byContent map[string]addedToken
	lengths   [256][]int // by first byte: the contents' lengths, longest first
}

func newAddedTokens(list []addedToken) addedTokens {
	a := addedTokens{byContent: make(map[string]addedToken, len(list))}
	for _, tok := range list {
		if tok.content == "" {
			continue
		}
		if _, dup := a.byContent[tok.content]; dup {
			continue
		}
		a.byContent[tok.content] = tok
		ls := a.lengths[tok.content[0]]
		if i := sort.Search(len(ls), func(i int) bool { return ls[i] <= len(tok.content) }); i == len(ls) || ls[i] != len(tok.content) {
			ls = append(ls, 0)
			copy(ls[i+1:], ls[i:])
			ls[i] = len(tok.content)
		}
		a.lengths[tok.content[0]] = ls
	}
	return a
}

// section is a stretch of text to tokenize (id -1) or one added token.
type section struct {
	text string
	id   int
}

// split cuts text at the added tokens. Whitespace next to an lstrip or
// rstrip token is dropped from the text beside it, as transformers.js
// does.
func (a addedTokens) split(text string) []section {
	if len(a.byContent) == 0 {
		return []section{{text: text, id: -1}}
	}
	var out []section
	start := 0
	for i := 0; i < len(text); {
		var (
			tok   addedToken
			found bool
		)
		for _, n := range a.lengths[text[i]] {
			if i+n <= len(text) {
				if tok, found = a.byContent[text[i:i+n]]; found {
					break
				}
			}
		}
		if !found {
			i++
			continue
		}
		before := text[start:i]
		if tok.lstrip {
			before = strings.TrimRightFunc(before, unicode.IsSpace)
		}
		if before != "" {
			out = append(out, section{text: before, id: -1})
		}
		out = append(out, section{text: tok.content, id: tok.id})
		i += len(tok.content)
		if tok.rstrip {
			rest := strings.TrimLeftFunc(text[i:], unicode.IsSpace)
			i = len(text) - len(rest)
		}
		start = i
	}
	if start < len(text) {
		out = append(out, section{text: text[start:], id: -1})
	}
	return out
}
