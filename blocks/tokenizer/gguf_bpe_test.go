package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOracleGGUF converts the oracle's Llama 3 and Qwen3 tokenizer.json to
// GGUF metadata as llama.cpp's convert_hf_to_gguf.py does (tokens by id,
// added special tokens and those that look special as control, others
// as user-defined, merges as "a b", tokenizer.ggml.pre "llama-bpe" and "qwen2") and requires the
// oracle's ids from FromGGUF: Encode(text, false) gives transformers'
// encode without special tokens; Encode(text, true) puts BOS first for
// llama-bpe (llama.cpp's add_bos default) and nothing for Qwen.
func TestOracleGGUF(t *testing.T) {
	t.Parallel()
	paths := startOracle(t)
	cases := []struct {
		model, pre string
		bos, eos   int
		addBOS     *bool
	}{{"llama3", "llama-bpe", 128000, 128001, nil}, {"qwen3", "qwen2", -1, 151645, new(bool)}}
	toks := make([]*RankedBPE, len(cases))
	for i, tc := range cases {
		path := filepath.Join(t.TempDir(), tc.model+".gguf")
		require.NoError(t, os.WriteFile(path, ggufFromTokenizerJSON(t, paths[tc.model], tc.pre, tc.bos, tc.eos, tc.addBOS), 0o600))
		tok, err := FromGGUF(path)
		require.NoError(t, err)
		var ok bool
		toks[i], ok = tok.(*RankedBPE)
		require.True(t, ok, "%T, want *RankedBPE", tok)
	}
	oracle, texts := waitOracle(t, paths)
	for i, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			want, r := oracle[tc.model], toks[i]
			require.Equal(t, orNone(want.BOS), r.BOS())
			require.Equal(t, orNone(want.EOS), r.EOS())
			for i, text := range texts {
				w := want.Results[i]
				plain, err := r.Encode(text, false)
				require.NoError(t, err)
				require.Equal(t, orEmpty(w.Plain), plain, "%s text %d %q: oracle tokens %q", tc.model, i, text, w.Tokens)
				ids, err := r.Encode(text, true)
				require.NoError(t, err)
				if tc.addBOS == nil {
					require.Equal(t, append([]int{*want.BOS}, plain...), ids, "%s text %d %q with BOS", tc.model, i, text)
				} else {
					require.Equal(t, plain, ids, "%s text %d %q with special tokens", tc.model, i, text)
				}
				require.Equal(t, normalizedText(tc.model, text), DecodeAll(r, plain), "%s text %d %q round trip", tc.model, i, text)
			}
		})
	}
}

// ggufFromTokenizerJSON lays out the GGUF metadata of a byte-level
// tokenizer.json, with extra keys at the end.
func ggufFromTokenizerJSON(t *testing.T, path, pre string, bos, eos int, addBOS *bool, extra ...ggufKV) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var f hfBPEFile
	require.NoError(t, json.Unmarshal(data, &f))
	merges, err := parseMerges(f.Model.Merges)
	require.NoError(t, err)
	var vocab map[string]int
	require.NoError(t, json.Unmarshal(f.Model.Vocab, &vocab))
	n := len(vocab)
	for _, a := range f.AddedTokens {
		n = max(n, a.ID+1)
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	for tok, id := range vocab {
		tokens[id], types[id] = tok, TypeNormal
	}
	for _, a := range f.AddedTokens {
		tokens[a.ID], types[a.ID] = a.Content, TypeUserDefined
		if a.Special || looksSpecial(a.Content) { // convert_hf_to_gguf.py's does_token_look_special
			types[a.ID] = TypeControl
		}
	}
	for id, tok := range tokens {
		require.NotEmpty(t, tok, "id %d has no token", id)
	}
	lines := make([]string, len(merges))
	for i, mg := range merges {
		lines[i] = mg[0] + " " + mg[1]
	}
	kvs := []ggufKV{
		{"general.architecture", 8, "llama"},
		{"tokenizer.ggml.model", 8, "gpt2"},
		{"tokenizer.ggml.pre", 8, pre},
		{"tokenizer.ggml.tokens", 9, tokens},
		{"tokenizer.ggml.token_type", 9, types},
		{"tokenizer.ggml.merges", 9, lines},
	}
	if bos >= 0 {
		kvs = append(kvs, ggufKV{"tokenizer.ggml.bos_token_id", 4, uint32(bos)})
	}
	if eos >= 0 {
		kvs = append(kvs, ggufKV{"tokenizer.ggml.eos_token_id", 4, uint32(eos)})
	}
	if addBOS != nil {
		kvs = append(kvs, ggufKV{"tokenizer.ggml.add_bos_token", 7, *addBOS})
	}
	return ggufBytes(3, append(kvs, extra...))
}

// TestFromGGUFByteLevelSynthetic covers the gpt2 metadata on a hand-built
// file: control and user-defined tokens matched in the text, the special
// ids, add_bos/add_eos, the default pre-tokenizer, and errors.
func TestFromGGUFByteLevelSynthetic(t *testing.T) {
	base := func() []ggufKV {
		return []ggufKV{
			{"tokenizer.ggml.model", 8, "gpt2"},
			{"tokenizer.ggml.tokens", 9, []string{"<|bos|>", "a", "b", "Ġ", "ab", "Ġab", "<|eot|>", "<u>"}},
			{"tokenizer.ggml.token_type", 9, []int32{3, 1, 1, 1, 1, 1, 3, 4}},
			{"tokenizer.ggml.merges", 9, []string{"a b", "Ġ ab"}},
			{"tokenizer.ggml.bos_token_id", 4, uint32(0)},
			{"tokenizer.ggml.eos_token_id", 4, uint32(6)},
			{"tokenizer.ggml.eot_token_id", 4, uint32(6)},
			{"tokenizer.ggml.add_bos_token", 7, true},
			{"tokenizer.ggml.add_eos_token", 7, true},
		}
	}
	with := func(kvs []ggufKV, kv ggufKV) []ggufKV {
		out := []ggufKV{kv}
		for _, x := range kvs {
			if x.key != kv.key {
				out = append(out, x)
			}
		}
		return out
	}
	dir := t.TempDir()
	write := func(kvs []ggufKV) string {
		p := filepath.Join(dir, "m.gguf")
		require.NoError(t, os.WriteFile(p, ggufBytes(3, kvs), 0o600))
		return p
	}
	tok, err := FromGGUF(write(base()))
	require.NoError(t, err)
	r, ok := tok.(*RankedBPE)
	require.True(t, ok, "%T", tok)
	require.Equal(t, []int{0, 6, 6}, []int{r.BOS(), r.EOS(), r.EOT()})
	ids := encode(t, r, "ab ab<u>", true)
	require.Equal(t, []int{0, 4, 5, 7, 6}, ids, "GPT-2 split: ab, Ġab; a+b, then Ġ+ab; <u> matched")
	require.Equal(t, "ab ab<u>", DecodeAll(r, ids[1:len(ids)-1]))
	require.Equal(t, "<|bos|>", r.Piece(0))

	for _, tc := range []struct {
		name string
		kvs  []ggufKV
		is   error
		want string
	}{
		{"unknown pre", with(base(), ggufKV{"tokenizer.ggml.pre", 8, "falcon"}), ErrUnsupported, `tokenizer.ggml.pre "falcon"`},
		{"merge without space", with(base(), ggufKV{"tokenizer.ggml.merges", 9, []string{"ab"}}), ErrFormat, `tokenizer.ggml.merges item 0 "ab"`},
		{"merge out of vocabulary", with(base(), ggufKV{"tokenizer.ggml.merges", 9, []string{"b a"}}), ErrFormat, `merge 0 "b" + "a"`},
		{"types too short", with(base(), ggufKV{"tokenizer.ggml.token_type", 9, []int32{1}}), ErrFormat, "1 token types for 8 tokens"},
		{"EOT out of range", with(base(), ggufKV{"tokenizer.ggml.eot_token_id", 4, uint32(8)}), ErrFormat, "eot_token_id is 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(tc.kvs)
			_, err := FromGGUF(path)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, path)
		})
	}
}
