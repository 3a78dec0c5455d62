package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

type obj = map[string]any

// writeTokenizerJSON writes doc as tokenizer.json, and config (unless nil)
// as tokenizer_config.json beside it, in a new directory.
func writeTokenizerJSON(t *testing.T, doc, config obj) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]obj{"tokenizer.json": doc, "tokenizer_config.json": config} {
		if v == nil {
			continue
		}
		data, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	return filepath.Join(dir, "tokenizer.json")
}

// bpeDoc is a tokenizer.json with a BPE model of vocab and merges and no
// other components; set adds or replaces top-level keys and model keys
// (prefixed "model.").
func bpeDoc(vocab obj, merges any, set obj) obj {
	model := obj{"type": "BPE", "vocab": vocab, "merges": merges}
	doc := obj{"version": "1.0", "added_tokens": []any{}, "model": model}
	for k, v := range set {
		if len(k) > 6 && k[:6] == "model." {
			model[k[6:]] = v
		} else {
			doc[k] = v
		}
	}
	return doc
}

func loadRanked(t *testing.T, doc, config obj) *RankedBPE {
	t.Helper()
	r, err := LoadRankedBPE(writeTokenizerJSON(t, doc, config))
	require.NoError(t, err)
	return r
}

func encode(t *testing.T, tok Tokenizer, text string, addBOS bool) []int {
	t.Helper()
	ids, err := tok.Encode(text, addBOS)
	require.NoError(t, err)
	return ids
}

// TestRankedMergeOrder: the lowest rank merges first, and among equal
// ranks the leftmost pair (Hugging Face tokenizers' and transformers.js's
// order); both merge formats read alike.
func TestRankedMergeOrder(t *testing.T) {
	vocab := obj{"a": 0, "b": 1, "aa": 2, "ab": 3, "aab": 4}
	for name, merges := range map[string]any{
		"strings": []string{"a a", "a b", "aa b"},
		"pairs":   [][2]string{{"a", "a"}, {"a", "b"}, {"aa", "b"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := loadRanked(t, bpeDoc(vocab, merges, nil), nil)
			for text, want := range map[string][]int{
				"aab":  {4},    // a+a (rank 0), then aa+b (rank 2)
				"aaaa": {2, 2}, // three equal a+a pairs: the leftmost, then the one after
				"aaab": {2, 3}, // a+a leftmost; then a+b; aa+ab is no merge
				"abab": {3, 3},
				"ba":   {1, 0},
			} {
				require.Equal(t, want, encode(t, r, text, false), "%q", text)
				require.Equal(t, text, DecodeAll(r, want))
			}
		})
	}
}

// TestRankedIgnoreMerges: with ignore_merges a word in the vocabulary is
// one token even when the merges would not build it.
func TestRankedIgnoreMerges(t *testing.T) {
	vocab := obj{"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}
	merges := []string{"a b"}
	require.Equal(t, []int{3, 2}, encode(t, loadRanked(t, bpeDoc(vocab, merges, nil), nil), "abc", false))
	require.Equal(t, []int{4}, encode(t, loadRanked(t, bpeDoc(vocab, merges, obj{"model.ignore_merges": true}), nil), "abc", false))
}

// TestRankedUnknown: characters outside the vocabulary become byte tokens
// (byte_fallback, when all their bytes have one), else the unknown token,
// fused when fuse_unk; with neither, Encode fails.
func TestRankedUnknown(t *testing.T) {
	vocab := obj{"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3, "<0xE2>": 4}
	set := obj{"model.unk_token": "<unk>", "model.byte_fallback": true, "decoder": obj{"type": "ByteFallback"}}
	r := loadRanked(t, bpeDoc(vocab, []string{}, set), nil)
	require.Equal(t, []int{3, 1, 2, 3}, encode(t, r, "aéa", false), "é is C3 A9")
	require.Equal(t, []int{3, 0, 0}, encode(t, r, "a€€", false), "€ is E2 82 AC: no <0x82>")
	require.Equal(t, "aéa", DecodeAll(r, []int{3, 1, 2, 3}))

	set["model.fuse_unk"] = true
	r = loadRanked(t, bpeDoc(vocab, []string{}, set), nil)
	require.Equal(t, []int{3, 0, 3, 0}, encode(t, r, "a€€a€", false))

	r = loadRanked(t, bpeDoc(obj{"a": 0}, []string{}, nil), nil)
	_, err := r.Encode("ab", false)
	require.ErrorIs(t, err, ErrEncode)
}

// TestRankedAddedTokens: added tokens are matched in the raw text first,
// leftmost-longest; lstrip and rstrip eat the whitespace beside them.
func TestRankedAddedTokens(t *testing.T) {
	vocab := obj{"a": 0, " ": 1, "<": 2, "x": 3, ">": 4, "y": 5}
	added := []obj{
		{"id": 10, "content": "<x>", "special": true},
		{"id": 11, "content": "<x><y>", "special": false},
		{"id": 12, "content": "[L]", "lstrip": true},
		{"id": 13, "content": "[R]", "rstrip": true},
	}
	r := loadRanked(t, bpeDoc(vocab, []string{}, obj{"added_tokens": added}), nil)
	require.Equal(t, 14, r.VocabSize())
	for text, want := range map[string][]int{
		"a<x><y>a": {0, 11, 0},
		"a<x>a":    {0, 10, 0},
		"<x><x>":   {10, 10},
		"<x":       {2, 3},
		"a  [L]a":  {0, 12, 0},
		"a[R] \ta": {0, 13, 0},
		"a [R] a":  {0, 1, 13, 0},
		" [L] ":    {12, 1},
	} {
		require.Equal(t, want, encode(t, r, text, false), "%q", text)
	}
	require.Equal(t, "<x>a<x><y>", DecodeAll(r, []int{10, 0, 11}), "added tokens decode to their content")
}

// TestRankedSpecialTokens: BOS and EOS come from tokenizer_config.json (a
// string or an AddedToken object), else BOS from the post-processor's
// template; Encode with addBOS puts the template's tokens around the text,
// and an explicit add_bos_token / add_eos_token decides about BOS / EOS.
func TestRankedSpecialTokens(t *testing.T) {
	vocab := obj{"<s>": 0, "</s>": 1, "a": 2}
	added := []obj{{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true}}
	template := obj{
		"type":   "TemplateProcessing",
		"single": []obj{{"SpecialToken": obj{"id": "<s>", "type_id": 0}}, {"Sequence": obj{"id": "A", "type_id": 0}}, {"SpecialToken": obj{"id": "</s>", "type_id": 0}}},
		"special_tokens": obj{
			"<s>":  obj{"id": "<s>", "ids": []int{0}, "tokens": []string{"<s>"}},
			"</s>": obj{"id": "</s>", "ids": []int{1}, "tokens": []string{"</s>"}},
		},
	}
	withTemplate := bpeDoc(vocab, []string{}, obj{"added_tokens": added, "post_processor": template})
	plain := bpeDoc(vocab, []string{}, obj{"added_tokens": added, "post_processor": obj{"type": "ByteLevel"}})
	for _, tc := range []struct {
		name     string
		doc      obj
		config   obj
		bos, eos int
		want     []int
	}{
		{"template", withTemplate, nil, 0, -1, []int{0, 2, 1}},
		{"template, no BOS", withTemplate, obj{"bos_token": "<s>", "add_bos_token": false}, 0, -1, []int{2, 1}},
		{"template, no EOS", withTemplate, obj{"eos_token": obj{"content": "</s>", "__type": "AddedToken"}, "add_eos_token": false}, 0, 1, []int{0, 2}},
		{"config adds BOS", plain, obj{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true}, 0, 1, []int{0, 2}},
		{"config without add_bos_token", plain, obj{"bos_token": "<s>"}, 0, -1, []int{2}},
		{"no BOS at all", plain, obj{"bos_token": nil}, -1, -1, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := loadRanked(t, tc.doc, tc.config)
			require.Equal(t, tc.bos, r.BOS())
			require.Equal(t, tc.eos, r.EOS())
			require.Equal(t, tc.want, encode(t, r, "a", true))
			require.Equal(t, []int{2}, encode(t, r, "a", false))
		})
	}
}

// TestRankedSentencePieceStyle runs a Llama-2-style pipeline: Prepend and
// Replace normalizers, the Replace/ByteFallback/Fuse/Strip decoder, whose
// Strip drops the dummy-prefix space after BOS.
func TestRankedSentencePieceStyle(t *testing.T) {
	vocab := obj{"<s>": 0, "▁": 1, "a": 2, "b": 3, "▁a": 4, "▁b": 5, "<0x21>": 6}
	doc := bpeDoc(vocab, []string{"▁ a", "▁ b"}, obj{
		"added_tokens": []obj{{"id": 0, "content": "<s>", "special": true}},
		"normalizer": obj{"type": "Sequence", "normalizers": []obj{
			{"type": "Prepend", "prepend": "▁"},
			{"type": "Replace", "pattern": obj{"String": " "}, "content": "▁"},
		}},
		"decoder": obj{"type": "Sequence", "decoders": []obj{
			{"type": "Replace", "pattern": obj{"String": "▁"}, "content": " "},
			{"type": "ByteFallback"}, {"type": "Fuse"},
			{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model.byte_fallback": true,
	})
	r := loadRanked(t, doc, obj{"bos_token": "<s>", "add_bos_token": true})
	ids := encode(t, r, "a b!", true)
	require.Equal(t, []int{0, 4, 5, 6}, ids)
	require.Equal(t, "<s>a b!", DecodeAll(r, ids))
	require.Equal(t, " a", r.Decode(-1, 4), "the space is dropped only after BOS")
	require.Equal(t, "!", r.Decode(5, 6))
}

// TestRankedNormalizers covers the Unicode forms and a Replace by regular
// expression.
func TestRankedNormalizers(t *testing.T) {
	for _, tc := range []struct {
		normalizer obj
		in, out    string
	}{
		{obj{"type": "NFC"}, "e\u0301", "é"},
		{obj{"type": "NFD"}, "é", "e\u0301"},
		{obj{"type": "NFKC"}, "ﬁ", "fi"},
		{obj{"type": "NFKD"}, "ﬁé", "fie\u0301"},
		{obj{"type": "Replace", "pattern": obj{"Regex": `\s+`}, "content": "_"}, "a \t b\nc", "a_b_c"},
	} {
		c := &hfComponent{}
		data, err := json.Marshal(tc.normalizer)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, c))
		f, err := c.normalizer()
		require.NoError(t, err)
		require.Equal(t, tc.out, f(tc.in), "%v", tc.normalizer)
	}
}

func TestLoadRankedBPEErrors(t *testing.T) {
	vocab := obj{"a": 0, "b": 1, "ab": 2}
	split := obj{"type": "Split", "pattern": obj{"Regex": "a"}, "behavior": "Isolated"}
	for _, tc := range []struct {
		name string
		doc  obj
		is   error
		want string
	}{
		{"unigram", obj{"model": obj{"type": "Unigram", "vocab": []any{}}}, ErrUnsupported, `model type "Unigram"`},
		{"no vocab", obj{"model": obj{"type": "BPE"}}, ErrFormat, "no vocab"},
		{"merge out of vocabulary", bpeDoc(vocab, []string{"a c"}, nil), ErrFormat, `merge 0 "a" + "c"`},
		{"merge result out of vocabulary", bpeDoc(vocab, []string{"b a"}, nil), ErrFormat, `merge 0 "b" + "a"`},
		{"merge without space", bpeDoc(vocab, []string{"ab"}, nil), ErrFormat, `merge 0 "ab"`},
		{"merges of numbers", bpeDoc(vocab, []int{1}, nil), ErrFormat, "model.merges"},
		{"shared id", bpeDoc(obj{"a": 0, "b": 0}, []string{}, nil), ErrFormat, "share id 0"},
		{"dropout", bpeDoc(vocab, []string{}, obj{"model.dropout": 0.1}), ErrUnsupported, "dropout"},
		{"suffix", bpeDoc(vocab, []string{}, obj{"model.end_of_word_suffix": "</w>"}), ErrUnsupported, "end_of_word_suffix"},
		{"unk not in vocabulary", bpeDoc(vocab, []string{}, obj{"model.unk_token": "<unk>"}), ErrFormat, `unk_token "<unk>"`},
		{"bad regex", bpeDoc(vocab, []string{}, obj{"pre_tokenizer": obj{"type": "Split", "pattern": obj{"Regex": "(a"}, "behavior": "Isolated"}}), ErrFormat, "regular expression"},
		{"split behavior", bpeDoc(vocab, []string{}, obj{"pre_tokenizer": obj{"type": "Split", "pattern": obj{"String": "a"}, "behavior": "Sideways"}}), ErrUnsupported, `"Sideways"`},
		{"pattern missing", bpeDoc(vocab, []string{}, obj{"pre_tokenizer": obj{"type": "Split", "behavior": "Isolated"}}), ErrFormat, "without a pattern"},
		{"normalizer", bpeDoc(vocab, []string{}, obj{"normalizer": obj{"type": "Lowercase"}}), ErrUnsupported, `normalizer "Lowercase"`},
		{"pre-tokenizer", bpeDoc(vocab, []string{}, obj{"pre_tokenizer": obj{"type": "Sequence", "pretokenizers": []obj{split, {"type": "Metaspace"}}}}), ErrUnsupported, `pre_tokenizer "Metaspace"`},
		{"decoder", bpeDoc(vocab, []string{}, obj{"decoder": obj{"type": "WordPiece"}}), ErrUnsupported, `decoder "WordPiece"`},
		{"strip from the end", bpeDoc(vocab, []string{}, obj{"decoder": obj{"type": "Strip", "content": " ", "start": 0, "stop": 1}}), ErrUnsupported, "Strip"},
		{"post-processor", bpeDoc(vocab, []string{}, obj{"post_processor": obj{"type": "BertProcessing"}}), ErrUnsupported, `post_processor "BertProcessing"`},
		{"template token", bpeDoc(vocab, []string{}, obj{"post_processor": obj{"type": "TemplateProcessing", "single": []obj{{"SpecialToken": obj{"id": "<s>"}}}}}), ErrFormat, `"<s>"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTokenizerJSON(t, tc.doc, nil)
			_, err := LoadRankedBPE(path)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, path)
		})
	}
	path := writeTokenizerJSON(t, bpeDoc(vocab, []string{}, nil), obj{"bos_token": 7})
	_, err := LoadRankedBPE(path)
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "bos_token")
	_, err = LoadRankedBPE(filepath.Join(t.TempDir(), "absent.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestRankedConcurrent encodes from several goroutines at once (run with
// -race): a RankedBPE, its regular expressions included, is shared.
func TestRankedConcurrent(t *testing.T) {
	vocab := obj{}
	for b := range 256 {
		vocab[byteChars[b]] = b
	}
	vocab["Ġa"], vocab["aa"] = 256, 257
	pre := obj{"type": "Sequence", "pretokenizers": []obj{
		{"type": "Split", "pattern": obj{"Regex": llama3Pattern}, "behavior": "Isolated"},
		{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
	}}
	r := loadRanked(t, bpeDoc(vocab, []string{"Ġ a", "a a"}, obj{"pre_tokenizer": pre, "decoder": obj{"type": "ByteLevel"}}), nil)
	texts := corpus(40)
	want := make([][]int, len(texts))
	for i, text := range texts {
		want[i] = encode(t, r, text, false)
		require.Equal(t, text, DecodeAll(r, want[i]), "byte-level BPE round-trips any bytes")
	}
	for g, got := range encodeConcurrently(r, texts, false, 4) {
		require.Equal(t, want, got, "goroutine %d", g)
	}
}
