package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gguf "github.com/gpustack/gguf-parser-go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// The end-to-end check of embedded tokenizers is blocks'
// TestLlamaCppOracle: llama.cpp reads the GGUF files written here with the
// real Llama 3, Qwen3 and Gemma 3 tokenizers. These tests pin the metadata
// against small hand-written tokenizer files.

// qwenSplit is Qwen2's pre-tokenizer pattern (tokenizer.json of Qwen2.5).
const qwenSplit = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// writeTokenizerFiles writes tokenizer.json and tokenizer_config.json
// (when cfg is not nil) into a new directory and returns the first's path.
func writeTokenizerFiles(t *testing.T, tok, cfg map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	write("tokenizer.json", tok)
	if cfg != nil {
		write("tokenizer_config.json", cfg)
	}
	return filepath.Join(dir, "tokenizer.json")
}

// byteLevelTokenizer is a Qwen2-style tokenizer.json: ids 0..259 are
// "t0".."t259" plus "a", "b", "ab" (260..262), merges as "a b" strings,
// and added tokens 263..266; id 267 is named by nothing.
func byteLevelTokenizer(split string) map[string]any {
	vocab := map[string]int{"a": 260, "b": 261, "ab": 262}
	for i := range 260 {
		vocab[fmt.Sprintf("t%d", i)] = i
	}
	return map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"a b"}, "byte_fallback": false},
		"added_tokens": []map[string]any{
			{"id": 263, "content": "<|endoftext|>", "special": true},
			{"id": 264, "content": "<|im_end|>", "special": false}, // looks special
			{"id": 265, "content": "<think>", "special": false},
			{"id": 266, "content": "▁x", "special": false},
			{"id": 268, "content": "<|pad|>", "special": true},
		},
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": split}, "behavior": "Isolated"},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false},
		}},
	}
}

// ggufKVMap reads a GGUF file's metadata.
func ggufKVMap(t *testing.T, path string) gguf.GGUFMetadataKVs {
	t.Helper()
	f, err := gguf.ParseGGUFFile(path)
	require.NoError(t, err)
	return f.Header.MetadataKV
}

// pieceOf returns token id of a GGUF file verbatim, read with
// blocks/tokenizer (gguf-parser-go trims spaces from strings).
func pieceOf(t *testing.T, path string, id int) string {
	t.Helper()
	tok, err := tokenizer.FromGGUF(path)
	require.NoError(t, err)
	p, ok := tok.(interface{ Piece(int) string })
	require.True(t, ok, "%T has no Piece", tok)
	return p.Piece(id)
}

func TestRealTokenizerByteLevelGGUF(t *testing.T) {
	path := writeTokenizerFiles(t, byteLevelTokenizer(qwenSplit), map[string]any{
		"bos_token": nil, "eos_token": map[string]any{"content": "<|im_end|>"}, "pad_token": "<|endoftext|>",
		"add_bos_token": false, "chat_template": "{{ messages }}",
	})
	c, err := DefaultConfig().WithTokenizer(path)
	require.NoError(t, err)
	require.Equal(t, 269, c.Vocab)
	out := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, WriteGGUF(out, c))
	kvs := ggufKVMap(t, out)

	get := func(key string) gguf.GGUFMetadataKV {
		kv, ok := kvs.Get(key)
		require.True(t, ok, "key %s", key)
		return kv
	}
	require.Equal(t, "gpt2", get("tokenizer.ggml.model").ValueString())
	require.Equal(t, "qwen2", get("tokenizer.ggml.pre").ValueString())
	tokens := get("tokenizer.ggml.tokens").ValueArray().ValuesString() // spaces trimmed by gguf-parser-go
	require.Len(t, tokens, 269)
	require.Equal(t, []string{"t0", "a", "b", "ab", "<|endoftext|>", "<|im_end|>", "<think>", "[PAD267]", "<|pad|>"},
		[]string{tokens[0], tokens[260], tokens[261], tokens[262], tokens[263], tokens[264], tokens[265], tokens[267], tokens[268]})
	require.Equal(t, " x", pieceOf(t, out, 266), "a user-defined token spells U+2581 as a space")
	types := get("tokenizer.ggml.token_type").ValueArray().ValuesInt32()
	require.Equal(t, []int32{1, 1, 3, 3, 4, 4, 5, 3}, []int32{types[0], types[262], types[263], types[264], types[265], types[266], types[267], types[268]})
	require.Equal(t, []string{"a b"}, get("tokenizer.ggml.merges").ValueArray().ValuesString())
	require.EqualValues(t, 264, get("tokenizer.ggml.eos_token_id").ValueUint32())
	require.EqualValues(t, 264, get("tokenizer.ggml.eot_token_id").ValueUint32())
	require.EqualValues(t, 263, get("tokenizer.ggml.padding_token_id").ValueUint32())
	require.False(t, get("tokenizer.ggml.add_bos_token").ValueBool())
	require.Equal(t, "{{ messages }}", get("tokenizer.chat_template").ValueString())
	for _, absent := range []string{"tokenizer.ggml.bos_token_id", "tokenizer.ggml.scores", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix"} {
		_, ok := kvs.Get(absent)
		require.False(t, ok, "key %s", absent)
	}
	// The model read back: no BOS (not SentencePiece's default 1), the
	// tokenizer's EOS.
	m, err := blocks.Open(out)
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, [2]int{-1, 264}, [2]int{m.Info().BOS, m.Info().EOS})
	_, ok := kvs.Get("tokenizer.ggml.unknown_token_id")
	require.False(t, ok, "the synthesized vocabulary's keys must be gone")
	emb, ok := kvs.Get("llama.embedding_length")
	require.True(t, ok)
	require.EqualValues(t, c.Dim, emb.ValueUint32())
}

func TestRealTokenizerSentencePieceGGUF(t *testing.T) {
	vocab := map[string]int{"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "▁": 260, "a": 261, "b": 262, "ab": 263, "▁a": 264, "▁ab": 265}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 4 + b
	}
	tok := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "byte_fallback": true, "unk_token": "<unk>",
			"merges": [][]string{{"a", "b"}, {"▁", "a"}, {"▁a", "b"}, {"▁", "ab"}}},
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<pad>", "special": true}, {"id": 1, "content": "<eos>", "special": true},
			{"id": 2, "content": "<bos>", "special": true}, {"id": 266, "content": "<end_of_turn>", "special": true},
			{"id": 267, "content": "▁▁", "special": false},
		},
		"normalizer": map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
	}
	cfg := map[string]any{"bos_token": "<bos>", "eos_token": "<end_of_turn>", "unk_token": "<unk>", "pad_token": "<pad>",
		"add_bos_token": true, "add_eos_token": false}
	for _, prepend := range []bool{false, true} {
		t.Run(fmt.Sprintf("prepend=%v", prepend), func(t *testing.T) {
			if prepend {
				tok["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
					map[string]any{"type": "Prepend", "prepend": "▁"},
					map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
				}}
			}
			c, err := DefaultConfig().WithTokenizer(writeTokenizerFiles(t, tok, cfg))
			require.NoError(t, err)
			require.Equal(t, 268, c.Vocab)
			out := filepath.Join(t.TempDir(), "m.gguf")
			require.NoError(t, WriteGGUF(out, c))
			kvs := ggufKVMap(t, out)
			get := func(key string) gguf.GGUFMetadataKV {
				kv, ok := kvs.Get(key)
				require.True(t, ok, "key %s", key)
				return kv
			}
			require.Equal(t, "llama", get("tokenizer.ggml.model").ValueString())
			_, ok := kvs.Get("tokenizer.ggml.pre")
			require.False(t, ok)
			_, ok = kvs.Get("tokenizer.ggml.merges")
			require.False(t, ok)
			tokens := get("tokenizer.ggml.tokens").ValueArray().ValuesString()
			require.Equal(t, []string{"<pad>", "<unk>", "<0x00>", "<0xFF>", "ab", "▁a", "▁ab", "<end_of_turn>"},
				[]string{tokens[0], tokens[3], tokens[4], tokens[259], tokens[263], tokens[264], tokens[265], tokens[266]})
			require.Equal(t, "  ", pieceOf(t, out, 267), "a user-defined token spells U+2581 as a space")
			types := get("tokenizer.ggml.token_type").ValueArray().ValuesInt32()
			require.Equal(t, []int32{3, 3, 2, 6, 6, 1, 1, 1, 3, 4},
				[]int32{types[0], types[2], types[3], types[4], types[259], types[260], types[263], types[265], types[266], types[267]})
			// A merged piece scores minus the rank of the first merge making
			// it; added tokens -1000 (convert_hf_to_gguf.py).
			scores := get("tokenizer.ggml.scores").ValueArray().ValuesFloat32()
			require.Equal(t, []float32{0, -1, -2, -1000, -1000}, []float32{scores[263], scores[264], scores[265], scores[266], scores[267]})
			require.EqualValues(t, 2, get("tokenizer.ggml.bos_token_id").ValueUint32())
			require.EqualValues(t, 266, get("tokenizer.ggml.eos_token_id").ValueUint32())
			require.EqualValues(t, 266, get("tokenizer.ggml.eot_token_id").ValueUint32())
			require.EqualValues(t, 3, get("tokenizer.ggml.unknown_token_id").ValueUint32())
			require.True(t, get("tokenizer.ggml.add_bos_token").ValueBool())
			require.False(t, get("tokenizer.ggml.add_eos_token").ValueBool())
			require.Equal(t, prepend, get("tokenizer.ggml.add_space_prefix").ValueBool())
		})
	}
}

func TestRealTokenizerHF(t *testing.T) {
	path := writeTokenizerFiles(t, byteLevelTokenizer(qwenSplit), map[string]any{"eos_token": "<|im_end|>"})
	c, err := DefaultConfig().WithTokenizer(path)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "hf")
	require.NoError(t, WriteHF(dir, c))
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		want, err := os.ReadFile(filepath.Join(filepath.Dir(path), name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}
	_, err = os.Stat(filepath.Join(dir, "tokenizer.model"))
	require.True(t, os.IsNotExist(err), "no synthesized tokenizer.model beside a real tokenizer.json")
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cfg))
	require.EqualValues(t, 269, cfg["vocab_size"])
	require.Nil(t, cfg["bos_token_id"])
	require.EqualValues(t, 264, cfg["eos_token_id"])
}

func TestRealTokenizerErrors(t *testing.T) {
	good := writeTokenizerFiles(t, byteLevelTokenizer(qwenSplit), nil)
	c, err := DefaultConfig().WithTokenizer(good)
	require.NoError(t, err)

	mismatch := c
	mismatch.Vocab = 320
	err = WriteGGUF(filepath.Join(t.TempDir(), "m.gguf"), mismatch)
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "WithTokenizer")

	_, err = WriteFormats(t.TempDir(), c, []Format{FormatLlama2C})
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "llama2c")

	wordPiece := byteLevelTokenizer(qwenSplit)
	wordPiece["model"] = map[string]any{"type": "WordPiece", "vocab": map[string]int{"a": 0}}
	badMerge := byteLevelTokenizer(qwenSplit)
	badMerge["model"].(map[string]any)["merges"] = []string{"ab"}
	tests := []struct {
		name string
		tok  map[string]any
		want string
	}{
		{"unknown split", byteLevelTokenizer(`\p{L}+|\s+`), "not one llama.cpp names"},
		{"not BPE", wordPiece, `model type "WordPiece"`},
		{"bad merge", badMerge, `merge 0 "ab"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DefaultConfig().WithTokenizer(writeTokenizerFiles(t, tt.tok, nil))
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err = DefaultConfig().WithTokenizer(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorContains(t, err, "missing.json")
}
