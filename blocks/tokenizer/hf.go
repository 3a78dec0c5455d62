package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	hftok "github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// hfTokenizer runs a Hugging Face tokenizer.json with
// github.com/sugarme/tokenizer and adds what that library lacks for Llama 2
// style files: byte fallback (it emits <unk> for characters outside the
// vocabulary; each such token is replaced by the byte pieces of the text it
// covers) and llama2.c's Decode(prev, token) contract.
type hfTokenizer struct {
	tk           *hftok.Tokenizer
	bos, eos     int
	unk          int    // -1 when the model has no unk_token
	unkText      string // the unknown token's text, e.g. "<unk>"
	byteFallback bool
	byteIDs      [256]int
	decoded      []string // by id: ▁ as space, byte pieces as the raw byte, special tokens ""
	isByte       []bool
}

var _ Tokenizer = (*hfTokenizer)(nil)

// hfFile is the part of tokenizer.json (https://huggingface.co/docs/tokenizers)
// inspected before handing the file to the library.
type hfFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type         string  `json:"type"`
		UnkToken     *string `json:"unk_token"`
		ByteFallback bool    `json:"byte_fallback"`
	} `json:"model"`
}

// LoadHF reads a Hugging Face tokenizer.json of a BPE model. A file with a
// ByteLevel or Split pre-tokenizer or decoder (byte-level BPE: GPT-2, Llama
// 3, Qwen2, Qwen3; and Gemma 3, whose Split on " " follows a Replace of " "
// by "▁") loads as a *RankedBPE (LoadRankedBPE). Any other, a
// SentencePiece-style BPE (Llama 1/2, TinyLlama, Mistral: "▁" for space,
// byte_fallback), runs with github.com/sugarme/tokenizer v0.3.0: BOS and
// EOS are the ids of "<s>" and "</s>". Non-BPE models give ErrUnsupported;
// malformed files ErrFormat. Unlike BPE (llama2.c), added tokens such as
// "<s>" written in the text are matched as those tokens, as Hugging Face
// does.
func LoadHF(path string) (tok Tokenizer, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: read tokenizer.json: %w", err)
	}
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: want a tokenizer.json object: %w", ErrFormat, path, err)
	}
	if f.Model.Type != "" && f.Model.Type != "BPE" {
		return nil, fmt.Errorf("%w: %s: model type %q, want \"BPE\"", ErrUnsupported, path, f.Model.Type)
	}
	for _, raw := range []json.RawMessage{f.PreTokenizer, f.Decoder} {
		for _, typ := range jsonTypes(raw) {
			if typ == "ByteLevel" || typ == "Split" {
				t, err := loadRankedBPE(path, data)
				if err != nil {
					return nil, err
				}
				return t, nil
			}
		}
	}
	defer func() {
		// sugarme/tokenizer panics on some inputs it cannot handle.
		if r := recover(); r != nil {
			tok, err = nil, fmt.Errorf("%w: %s: tokenizer.json library failed: %v", ErrFormat, path, r)
		}
	}()
	tk, err := pretrained.FromReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFormat, path, err)
	}
	h := &hfTokenizer{tk: tk, unk: -1, byteFallback: f.Model.ByteFallback}
	var ok bool
	if h.bos, ok = tk.TokenToId("<s>"); !ok {
		return nil, fmt.Errorf("%w: %s: no \"<s>\" token, want a Llama-style BOS", ErrUnsupported, path)
	}
	if h.eos, ok = tk.TokenToId("</s>"); !ok {
		return nil, fmt.Errorf("%w: %s: no \"</s>\" token, want a Llama-style EOS", ErrUnsupported, path)
	}
	if f.Model.UnkToken != nil {
		if h.unk, ok = tk.TokenToId(*f.Model.UnkToken); !ok {
			return nil, fmt.Errorf("%w: %s: unk_token %q is not in the vocabulary", ErrFormat, path, *f.Model.UnkToken)
		}
		h.unkText = *f.Model.UnkToken
	}
	special := make(map[int]bool)
	for _, a := range f.AddedTokens {
		if a.Special {
			special[a.ID] = true
		}
	}
	n := tk.GetVocabSize(true)
	h.decoded = make([]string, n)
	h.isByte = make([]bool, n)
	for i := range h.byteIDs {
		h.byteIDs[i] = -1
	}
	for id := range n {
		p, ok := tk.IdToToken(id)
		if !ok {
			return nil, fmt.Errorf("%w: %s: no token with id %d, want ids 0..%d", ErrFormat, path, id, n-1)
		}
		if b, isByte := parseBytePiece(p); isByte && h.byteFallback {
			h.decoded[id], h.isByte[id] = string([]byte{b}), true
			if h.byteIDs[b] < 0 {
				h.byteIDs[b] = id
			}
			continue
		}
		if special[id] && id != h.unk {
			continue // control tokens decode to nothing; <unk> prints, as in BPE
		}
		h.decoded[id] = strings.ReplaceAll(p, spaceMarker, " ")
	}
	return h, nil
}

// jsonTypes lists the "type" values anywhere in a JSON value.
func jsonTypes(raw json.RawMessage) []string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["type"].(string); ok {
				out = append(out, s)
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

func (h *hfTokenizer) BOS() int       { return h.bos }
func (h *hfTokenizer) EOS() int       { return h.eos }
func (h *hfTokenizer) VocabSize() int { return len(h.decoded) }

// Encode runs the library's pipeline (normalizer, pre-tokenizer, BPE)
// without its post-processor, puts BOS first when addBOS, and replaces each
// <unk> the library emits for a character outside the vocabulary by the byte
// pieces of that character (byte_fallback). It returns ErrEncode when the
// library fails.
func (h *hfTokenizer) Encode(text string, addBOS bool) (ids []int, err error) {
	if addBOS {
		ids = append(ids, h.bos)
	}
	if text == "" {
		return ids, nil
	}
	defer func() {
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("%w: tokenizer.json library failed on %q: %v", ErrEncode, text, r)
		}
	}()
	enc, err := h.tk.EncodeSingle(text, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	offsets := enc.GetOffsets()
	for i, id := range enc.GetIds() {
		if id != h.unk || h.unk < 0 || !h.byteFallback {
			ids = append(ids, id)
			continue
		}
		if i >= len(offsets) || len(offsets[i]) != 2 || offsets[i][0] < 0 || offsets[i][0] >= offsets[i][1] || offsets[i][1] > len(text) {
			return nil, fmt.Errorf("%w: <unk> at token %d has offsets %v outside the text (%d bytes)", ErrEncode, i, offsets[i], len(text))
		}
		src := text[offsets[i][0]:offsets[i][1]]
		if src == h.unkText {
			ids = append(ids, id) // the unknown token written in the text
			continue
		}
		for j := 0; j < len(src); j++ {
			b := h.byteIDs[src[j]]
			if b < 0 {
				return nil, fmt.Errorf("%w: no byte piece <0x%02X> for byte fallback", ErrEncode, src[j])
			}
			ids = append(ids, b)
		}
	}
	return ids, nil
}

// Decode follows llama2.c's rules as BPE.Decode does: "▁" is a space, a
// leading space is dropped after BOS, byte pieces give the raw byte, special
// tokens other than the unknown token give "", ids outside the vocabulary "".
func (h *hfTokenizer) Decode(prev, token int) string {
	if token < 0 || token >= len(h.decoded) {
		return ""
	}
	s := h.decoded[token]
	if prev == h.bos && !h.isByte[token] && strings.HasPrefix(s, " ") {
		s = s[1:]
	}
	return s
}
