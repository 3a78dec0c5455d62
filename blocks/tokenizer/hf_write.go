package tokenizer

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// WriteHF writes a Llama-2-style Hugging Face tokenizer.json for a BPE
// vocabulary (the layout transformers' LlamaTokenizerFast saves with
// legacy=true): normalizer Prepend("▁") then Replace(" " -> "▁"), no
// pre-tokenizer, a TemplateProcessing post-processor putting "<s>" first,
// decoder Replace/ByteFallback/Fuse/Strip, and a BPE model with
// byte_fallback and unk_token "<unk>". The merges are derived from the scores
// as transformers' SentencePiece converter does: every split of a normal
// piece into two normal pieces at a character boundary is a merge, ranked by
// the merged piece's score (highest first; ties by id). Inputs are as for
// WriteSentencePieceModel (real spaces or "▁"; types may be nil); the
// vocabulary needs "<s>", "</s>" and "<unk>". It returns ErrFormat for bad
// inputs.
func WriteHF(w io.Writer, pieces []string, scores []float32, types []int32) error {
	n := len(pieces)
	switch {
	case n == 0:
		return fmt.Errorf("%w: write tokenizer.json: no pieces", ErrFormat)
	case len(scores) != n:
		return fmt.Errorf("%w: write tokenizer.json: %d scores for %d pieces", ErrFormat, len(scores), n)
	case types != nil && len(types) != n:
		return fmt.Errorf("%w: write tokenizer.json: %d types for %d pieces", ErrFormat, len(types), n)
	}
	bos, eos, unk := indexOf(pieces, "<s>", -1), indexOf(pieces, "</s>", -1), indexOf(pieces, "<unk>", -1)
	if bos < 0 || eos < 0 || unk < 0 {
		return fmt.Errorf("%w: write tokenizer.json: want pieces \"<s>\", \"</s>\" and \"<unk>\" (found ids %d, %d, %d)", ErrFormat, bos, eos, unk)
	}
	vocab := make(map[string]int, n)
	marked := make([]string, n)
	typ := make([]int32, n)
	for id, p := range pieces {
		p = strings.ReplaceAll(p, " ", spaceMarker)
		if p == "" {
			return fmt.Errorf("%w: write tokenizer.json: piece %d is empty, want text", ErrFormat, id)
		}
		if prev, dup := vocab[p]; dup {
			return fmt.Errorf("%w: write tokenizer.json: pieces %d and %d are both %q, want unique pieces", ErrFormat, prev, id, p)
		}
		vocab[p] = id
		marked[id] = p
		typ[id] = inferType(p, id, bos, eos, unk)
		if types != nil {
			typ[id] = types[id]
		}
	}
	normal := func(id int) bool { return typ[id] == TypeNormal || typ[id] == TypeUserDefined }
	type merge struct {
		left, right string
		id          int
	}
	var merges []merge
	for id, p := range marked {
		if !normal(id) || scores[id] <= minMergeScore {
			continue
		}
		if !utf8.ValidString(p) {
			return fmt.Errorf("%w: write tokenizer.json: piece %d %q is not valid UTF-8", ErrFormat, id, p)
		}
		for i := range p { // i runs over character boundaries
			if i == 0 {
				continue
			}
			l, rt := p[:i], p[i:]
			lid, lok := vocab[l]
			rid, rok := vocab[rt]
			if lok && rok && normal(lid) && normal(rid) {
				merges = append(merges, merge{l, rt, id})
			}
		}
	}
	sort.SliceStable(merges, func(i, j int) bool {
		a, b := merges[i], merges[j]
		if scores[a.id] != scores[b.id] {
			return scores[a.id] > scores[b.id]
		}
		return a.id < b.id
	})
	mergeStrings := make([]string, len(merges))
	for i, m := range merges {
		mergeStrings[i] = m.left + " " + m.right
	}
	var added []hfAddedToken
	for id := range marked {
		if t := typ[id]; t == TypeControl || t == TypeUnknown {
			added = append(added, hfAddedToken{ID: id, Content: marked[id], Special: true})
		}
	}
	type obj = map[string]any
	str := func(s string) obj { return obj{"String": s} }
	doc := obj{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer": obj{"type": "Sequence", "normalizers": []obj{
			{"type": "Prepend", "prepend": spaceMarker},
			{"type": "Replace", "pattern": str(" "), "content": spaceMarker},
		}},
		"pre_tokenizer": nil,
		"post_processor": obj{
			"type":   "TemplateProcessing",
			"single": []obj{{"SpecialToken": obj{"id": "<s>", "type_id": 0}}, {"Sequence": obj{"id": "A", "type_id": 0}}},
			"pair": []obj{{"SpecialToken": obj{"id": "<s>", "type_id": 0}}, {"Sequence": obj{"id": "A", "type_id": 0}},
				{"SpecialToken": obj{"id": "<s>", "type_id": 1}}, {"Sequence": obj{"id": "B", "type_id": 1}}},
			"special_tokens": obj{"<s>": obj{"id": "<s>", "ids": []int{bos}, "tokens": []string{"<s>"}}},
		},
		"decoder": obj{"type": "Sequence", "decoders": []obj{
			{"type": "Replace", "pattern": str(spaceMarker), "content": " "},
			{"type": "ByteFallback"},
			{"type": "Fuse"},
			{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": obj{
			"type":                      "BPE",
			"dropout":                   nil,
			"unk_token":                 "<unk>",
			"continuing_subword_prefix": nil,
			"end_of_word_suffix":        nil,
			"fuse_unk":                  true,
			"byte_fallback":             true,
			"vocab":                     vocab,
			"merges":                    mergeStrings,
		},
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// hfAddedToken is one entry of tokenizer.json's added_tokens.
type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}
