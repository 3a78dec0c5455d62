package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

var (
	hf32kOnce sync.Once
	hf32kPath string
	hf32kErr  error
)

// hf32k writes the 32k Llama 2 vocabulary as a tokenizer.json (once per
// test process) and returns its path and the tokenizer.bin it came from.
func hf32k(t *testing.T) (string, *BPE) {
	t.Helper()
	b, err := LoadLlama2C(testenv.SharedFile(t, "models", "llama2-tokenizer-32k", "tokenizer.bin"))
	require.NoError(t, err)
	hf32kOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tokenizer-hf-")
		if err != nil {
			hf32kErr = err
			return
		}
		hf32kPath = filepath.Join(dir, "tokenizer.json")
		var buf bytes.Buffer
		pieces, scores, types := b.Vocab()
		if hf32kErr = WriteHF(&buf, pieces, scores, types); hf32kErr == nil {
			hf32kErr = os.WriteFile(hf32kPath, buf.Bytes(), 0o600)
		}
	})
	require.NoError(t, hf32kErr)
	return hf32kPath, b
}

// TestLoadHFMatchesLlama2C: the Llama-2-style tokenizer.json written from
// the 32k vocabulary, run by github.com/sugarme/tokenizer, reproduces the
// third-party reference encodings and llama2.c's encodings of the corpus
// (less the known differences), and decodes every id like BPE.
func TestLoadHFMatchesLlama2C(t *testing.T) {
	path, b := hf32k(t)
	h, err := LoadHF(path)
	require.NoError(t, err)
	require.Equal(t, 32000, h.VocabSize())
	require.Equal(t, 1, h.BOS())
	require.Equal(t, 2, h.EOS())
	for _, tc := range llama2Reference {
		got, err := h.Encode(tc.text, true)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%q", tc.text)
	}
	texts := naturalCorpus(300)
	require.Greater(t, len(texts), 120)
	for i, text := range texts {
		want, err := b.Encode(text, true)
		require.NoError(t, err)
		got, err := h.Encode(text, true)
		require.NoError(t, err)
		require.Equal(t, want, got, "naturalCorpus[%d] %q", i, text)
	}
	for id := range b.VocabSize() {
		for _, prev := range []int{0, 1, 29871} {
			require.Equal(t, b.Decode(prev, id), h.Decode(prev, id), "Decode(%d, %d)", prev, id)
		}
	}
	require.Equal(t, "", h.Decode(1, 32000))
	require.Equal(t, "", h.Decode(1, -1))
}

// TestLoadHFKnownDifferences pins where the Hugging Face path differs from
// llama2.c, so a change in either shows up: sugarme/tokenizer v0.3.0 breaks
// ties between equal-rank merges by heap order rather than leftmost first
// (runs of a repeated character); as in Hugging Face, added tokens such as
// "<s>" inside the text are matched as those tokens and a literal U+2581 is
// a space. In the first case both encodings decode to the text.
func TestLoadHFKnownDifferences(t *testing.T) {
	path, b := hf32k(t)
	h, err := LoadHF(path)
	require.NoError(t, err)
	cases := []struct {
		text      string
		llama2c   []int
		hf        []int
		roundTrip bool
	}{
		// ▁a, aaa, aa (leftmost merges first) vs ▁a, aa, aaa.
		{"aaaaaaa", []int{1, 263, 27137, 7340}, []int{1, 263, 7340, 27137}, true},
		// U+2581 as its bytes vs a space (Hugging Face cannot tell them apart).
		{"a\u2581b", []int{1, 263, 229, 153, 132, 29890}, []int{1, 263, 289}, false},
		// "<s>" as characters vs the BOS token.
		{"<s> hi", []int{1, 529, 29879, 29958, 7251}, []int{1, 1, 29871, 7251}, false},
	}
	// The library reports offsets [0 0] for a NUL byte at the start, so the
	// byte fallback cannot tell which bytes it stands for.
	_, err = h.Encode("\x00x", true)
	require.ErrorIs(t, err, ErrEncode)
	for _, tc := range cases {
		want, err := b.Encode(tc.text, true)
		require.NoError(t, err)
		require.Equal(t, tc.llama2c, want, "llama2.c %q", tc.text)
		got, err := h.Encode(tc.text, true)
		require.NoError(t, err)
		require.Equal(t, tc.hf, got, "tokenizer.json %q", tc.text)
		if tc.roundTrip {
			require.Equal(t, tc.text, b.DecodeAll(got))
		}
	}
}

func TestLoadHFConcurrent(t *testing.T) {
	path, b := hf32k(t)
	h, err := LoadHF(path)
	require.NoError(t, err)
	texts := naturalCorpus(40)
	results := encodeConcurrently(h, texts, true, 4)
	for g := range results {
		for i, text := range texts {
			want, err := b.Encode(text, true)
			require.NoError(t, err)
			require.Equal(t, want, results[g][i], "goroutine %d %q", g, text)
		}
	}
}

func TestLoadHFErrors(t *testing.T) {
	path, _ := hf32k(t)
	valid, err := os.ReadFile(path)
	require.NoError(t, err)
	llama3 := map[string]any{
		"added_tokens":  []any{},
		"normalizer":    nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\s+(?!\S)|\s+`}, "behavior": "Isolated", "invert": false}, map[string]any{"type": "Digits"}, map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}}},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": map[string]any{"a": 0}, "merges": []any{}},
	}
	llama3JSON, err := json.Marshal(llama3)
	require.NoError(t, err)
	unigram := []byte(`{"model": {"type": "Unigram", "vocab": [["<unk>", 0]]}}`)
	cases := []struct {
		name string
		data []byte
		is   error
		want string
	}{
		{"not JSON", []byte("\x00\x01binary"), ErrFormat, "want a tokenizer.json object"},
		{"truncated", valid[:len(valid)/2], ErrFormat, "want a tokenizer.json object"},
		{"byte-level with Digits", llama3JSON, ErrUnsupported, `pre_tokenizer "Digits"`},
		{"unigram", unigram, ErrUnsupported, `"Unigram"`},
		{"no BOS", []byte(`{"model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"<unk>": 0, "a": 1}, "merges": []}}`), ErrUnsupported, `no "<s>"`},
		{"vocab of wrong type", []byte(`{"model": {"type": "BPE", "vocab": [1, 2], "merges": []}}`), ErrFormat, "library failed"},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "tokenizer.json")
			require.NoError(t, os.WriteFile(p, tc.data, 0o600))
			_, err := LoadHF(p)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, p)
		})
	}
}

func TestWriteHFErrors(t *testing.T) {
	cases := []struct {
		name   string
		pieces []string
		scores []float32
		want   string
	}{
		{"empty", nil, nil, "no pieces"},
		{"scores", []string{"<unk>", "<s>", "</s>"}, []float32{0}, "1 scores for 3 pieces"},
		{"no specials", []string{"a", "b"}, []float32{0, 0}, `want pieces "<s>"`},
		{"duplicate", []string{"<unk>", "<s>", "</s>", "a", "a"}, []float32{0, 0, 0, 0, 0}, "pieces 3 and 4"},
		{"invalid UTF-8", []string{"<unk>", "<s>", "</s>", "\xff"}, []float32{0, 0, 0, 0}, "not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteHF(&bytes.Buffer{}, tc.pieces, tc.scores, nil)
			require.ErrorIs(t, err, ErrFormat)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
