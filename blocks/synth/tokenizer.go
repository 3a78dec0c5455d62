package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A real tokenizer for a synthesized model: Config.Tokenizer names a Hugging
// Face tokenizer.json (with the tokenizer_config.json beside it), and the
// writers embed it in GGUF files the way llama.cpp's convert_hf_to_gguf.py
// does, and copy both files into Hugging Face directories. Two kinds:
//
//   - byte-level BPE (Llama 3, Qwen2/Qwen3): tokenizer.ggml.model "gpt2",
//     tokens (byte-level spellings), token_type, merges ("a b"), and
//     tokenizer.ggml.pre naming the pre-tokenizer, found from the
//     tokenizer.json's Split pattern (bpePreTokenizers) as llama.cpp's
//     get_vocab_base_pre finds it from a tokenization hash;
//   - SentencePiece-style BPE with byte fallback (Gemma 3, Llama 2):
//     tokenizer.ggml.model "llama", tokens (U+2581 for space), scores and
//     token_type, as _set_vocab_sentencepiece writes them from
//     tokenizer.model. tokenizer.json has no scores: a piece's score is
//     minus the rank of the first merge that makes it, which orders merges
//     exactly as tokenizer.json's merge list does (transformers'
//     SentencePieceExtractor sorts that list by the merged piece's score);
//     add_space_prefix follows the normalizer's Prepend("▁").
//
// Both get bos/eos/unknown/padding ids and add_bos/add_eos_token from
// tokenizer_config.json (SpecialVocab in gguf-py), an eot id when the
// vocabulary has one of llama.cpp's end-of-turn tokens, and the chat
// template.

// GGUF token types (llama.cpp's llama_token_type, gguf-py TokenType).
const (
	typeUserDefined int32 = 4
	typeUnused      int32 = 5
)

// bpePreTokenizers maps the Split regex of a byte-level tokenizer.json to
// llama.cpp's tokenizer.ggml.pre value for it (llama-vocab.cpp).
var bpePreTokenizers = map[string]string{
	// Llama 3, 3.1, 3.2 (convert_hf_to_gguf.py: "llama-bpe").
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: "llama-bpe",
	// Qwen2, Qwen2.5, Qwen3: digits one by one ("qwen2").
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: "qwen2",
}

// eotTokens are the end-of-turn tokens llama.cpp recognizes by their text
// (llama-vocab.cpp, special_eot_id), in the order they are looked for here.
var eotTokens = []string{"<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<EOT>"}

// hfTokenizerJSON is the part of a tokenizer.json read here.
type hfTokenizerJSON struct {
	Model struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		ByteFallback bool            `json:"byte_fallback"`
		UnkToken     *string         `json:"unk_token"`
	} `json:"model"`
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
}

// hfComponentJSON is a normalizer or pre-tokenizer, possibly a Sequence.
type hfComponentJSON struct {
	Type          string            `json:"type"`
	Normalizers   []hfComponentJSON `json:"normalizers"`
	Pretokenizers []hfComponentJSON `json:"pretokenizers"`
	Pattern       struct {
		Regex *string `json:"Regex"`
	} `json:"pattern"`
	Prepend string `json:"prepend"`
}

// flatten returns c and its Sequence members, depth first.
func (c hfComponentJSON) flatten() []hfComponentJSON {
	out := []hfComponentJSON{c}
	for _, m := range append(c.Normalizers, c.Pretokenizers...) {
		out = append(out, m.flatten()...)
	}
	return out
}

// realTokenizer is a tokenizer.json read for embedding: one entry per id.
type realTokenizer struct {
	path     string
	model    string // tokenizer.ggml.model: "gpt2" or "llama"
	pre      string // tokenizer.ggml.pre ("gpt2" only)
	tokens   []string
	types    []int32
	scores   []float32 // "llama" only
	merges   []string  // "gpt2" only
	spacePfx bool      // add_space_prefix ("llama" only)
	ids      map[string]int
	config   map[string]json.RawMessage // tokenizer_config.json
}

// WithTokenizer returns c with Tokenizer set to path (a Hugging Face
// tokenizer.json; tokenizer_config.json is read from the same directory)
// and Vocab set to the tokenizer's size (its largest id + 1). The error
// names what in the files cannot be embedded.
func (c Config) WithTokenizer(path string) (Config, error) {
	t, err := readRealTokenizer(path)
	if err != nil {
		return c, err
	}
	c.Tokenizer, c.Vocab = path, len(t.tokens)
	return c, nil
}

// loadTokenizer reads c.Tokenizer and checks that the model's vocabulary
// is the tokenizer's.
func (c Config) loadTokenizer() (*realTokenizer, error) {
	t, err := readRealTokenizer(c.Tokenizer)
	if err != nil {
		return nil, err
	}
	if c.Vocab != len(t.tokens) {
		return nil, fmt.Errorf("%w: vocab = %d but %s has %d tokens (set Vocab with Config.WithTokenizer)", ErrConfig, c.Vocab, c.Tokenizer, len(t.tokens))
	}
	return t, nil
}

// tokenizerCache holds the tokenizers readRealTokenizer read, by path, so
// that WithTokenizer and the writers after it parse a large tokenizer.json
// once. It keeps at most maxCachedTokenizers.
var tokenizerCache struct {
	mu      sync.Mutex // guards entries
	entries map[string]cachedTokenizer
}

const maxCachedTokenizers = 4

type cachedTokenizer struct {
	size  int64
	mtime time.Time
	tok   *realTokenizer
}

// readRealTokenizer reads a tokenizer.json and the tokenizer_config.json
// beside it, or returns the earlier result for the same unchanged
// tokenizer.json. The result is shared: callers must not modify it.
func readRealTokenizer(path string) (*realTokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("synth: tokenizer: %w", err)
	}
	c := &tokenizerCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[path]; ok && e.size == st.Size() && e.mtime.Equal(st.ModTime()) {
		return e.tok, nil
	}
	t, err := parseRealTokenizer(path)
	if err != nil {
		return nil, err
	}
	if c.entries == nil || len(c.entries) >= maxCachedTokenizers {
		c.entries = map[string]cachedTokenizer{}
	}
	c.entries[path] = cachedTokenizer{size: st.Size(), mtime: st.ModTime(), tok: t}
	return t, nil
}

// parseRealTokenizer reads a tokenizer.json and the tokenizer_config.json
// beside it.
func parseRealTokenizer(path string) (*realTokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("synth: tokenizer: %w", err)
	}
	var f hfTokenizerJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s is not a tokenizer.json: %w", ErrConfig, path, err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("%w: %s: model type %q, want \"BPE\" (byte-level or SentencePiece-style)", ErrConfig, path, f.Model.Type)
	}
	t := &realTokenizer{path: path, config: map[string]json.RawMessage{}}
	cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	if cfg, err := os.ReadFile(cfgPath); err == nil {
		if err := json.Unmarshal(cfg, &t.config); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, cfgPath, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("synth: tokenizer: %w", err)
	}

	n := 0
	for _, id := range f.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range f.AddedTokens {
		n = max(n, a.ID+1)
	}
	if n < minVocab {
		return nil, fmt.Errorf("%w: %s has %d tokens, want >= %d", ErrConfig, path, n, minVocab)
	}
	t.tokens, t.types = make([]string, n), make([]int32, n)
	t.ids = make(map[string]int, n)
	for i := range t.tokens {
		t.tokens[i], t.types[i] = fmt.Sprintf("[PAD%d]", i), typeUnused // ids no entry names, as the converter writes them
	}
	for tok, id := range f.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("%w: %s: token %q has id %d", ErrConfig, path, tok, id)
		}
		t.tokens[id], t.types[id] = tok, typeNormal
		t.ids[tok] = id
	}
	merges, err := parseMergeList(f.Model.Merges)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	if f.Model.ByteFallback {
		if err := t.sentencePiece(f, merges); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
		}
	} else if err := t.byteLevel(f, merges); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	// Added tokens, as convert_hf_to_gguf.py types them: special (or
	// special-looking) ones are control tokens, others user-defined, with
	// SentencePiece's U+2581 spelled as a space.
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("%w: %s: added token %q has id %d", ErrConfig, path, a.Content, a.ID)
		}
		content, typ := a.Content, typeControl
		if !a.Special && !looksSpecial(content) {
			content, typ = strings.ReplaceAll(content, "▁", " "), typeUserDefined
		}
		t.tokens[a.ID], t.types[a.ID] = content, typ
		t.ids[a.Content] = a.ID
		if t.scores != nil {
			t.scores[a.ID] = -1000
		}
	}
	return t, nil
}

// byteLevel fills in a byte-level BPE tokenizer ("gpt2").
func (t *realTokenizer) byteLevel(f hfTokenizerJSON, merges [][2]string) error {
	t.model = "gpt2"
	var pre hfComponentJSON
	if len(f.PreTokenizer) > 0 && string(f.PreTokenizer) != "null" {
		if err := json.Unmarshal(f.PreTokenizer, &pre); err != nil {
			return fmt.Errorf("pre_tokenizer: %w", err)
		}
	}
	for _, p := range pre.flatten() {
		if p.Type == "Split" && p.Pattern.Regex != nil {
			id, ok := bpePreTokenizers[*p.Pattern.Regex]
			if !ok {
				return fmt.Errorf("pre-tokenizer Split pattern %q is not one llama.cpp names here (Llama 3 or Qwen2)", *p.Pattern.Regex)
			}
			t.pre = id
		}
	}
	if t.pre == "" {
		return fmt.Errorf("no Split pre-tokenizer with a Regex pattern: not a Llama 3 or Qwen2 byte-level tokenizer")
	}
	t.merges = make([]string, len(merges))
	for i, m := range merges {
		t.merges[i] = m[0] + " " + m[1]
	}
	return nil
}

// sentencePiece fills in a SentencePiece-style BPE tokenizer ("llama"):
// scores from merge ranks, byte and unknown types, add_space_prefix.
func (t *realTokenizer) sentencePiece(f hfTokenizerJSON, merges [][2]string) error {
	t.model = "llama"
	t.scores = make([]float32, len(t.tokens))
	scored := make([]bool, len(t.tokens))
	for rank, m := range merges {
		id, ok := t.ids[m[0]+m[1]]
		if !ok {
			return fmt.Errorf("merge %d %q + %q makes no token of the vocabulary", rank, m[0], m[1])
		}
		if !scored[id] {
			t.scores[id], scored[id] = -float32(rank), true
		}
	}
	for id, tok := range t.tokens {
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' && t.types[id] == typeNormal {
			t.types[id] = typeByte
		}
	}
	if f.Model.UnkToken != nil {
		if id, ok := t.ids[*f.Model.UnkToken]; ok {
			t.types[id] = typeUnknown
		}
	}
	if len(f.Normalizer) > 0 && string(f.Normalizer) != "null" {
		var norm hfComponentJSON
		if err := json.Unmarshal(f.Normalizer, &norm); err != nil {
			return fmt.Errorf("normalizer: %w", err)
		}
		for _, n := range norm.flatten() {
			if n.Type == "Prepend" && n.Prepend == "▁" {
				t.spacePfx = true
			}
		}
	}
	return nil
}

// parseMergeList reads tokenizer.json merges: a list of "a b" strings
// (older files) or of [a, b] pairs (newer ones), told apart by the first
// item.
func parseMergeList(raw json.RawMessage) ([][2]string, error) {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimSpace(raw), []byte("[")), " \t\r\n")
	if len(raw) == 0 || string(raw) == "null" || len(trimmed) == 0 || trimmed[0] == ']' {
		return nil, nil
	}
	if trimmed[0] == '[' {
		var pairs [][2]string
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, fmt.Errorf("merges: want [a, b] pairs: %w", err)
		}
		for i, p := range pairs {
			if p[0] == "" || p[1] == "" {
				return nil, fmt.Errorf("merge %d %q: want two non-empty tokens", i, p)
			}
		}
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("merges: want \"a b\" strings: %w", err)
	}
	out := make([][2]string, len(lines))
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok || a == "" || b == "" {
			return nil, fmt.Errorf("merge %d %q: want two tokens separated by a space", i, l)
		}
		out[i] = [2]string{a, b}
	}
	return out, nil
}

// looksSpecial is convert_hf_to_gguf.py's does_token_look_special: added
// tokens that some models forget to mark special.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") ||
		strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>") ||
		strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">")
}

// configToken returns the id of tokenizer_config.json's key (a string or
// {"content": ...}); ok is false when it is absent, null or unknown.
func (t *realTokenizer) configToken(key string) (id int, ok bool) {
	raw, found := t.config[key]
	if !found {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var obj struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(raw, &obj) != nil {
			return 0, false
		}
		s = obj.Content
	}
	id, ok = t.ids[s]
	return id, ok
}

// configBool returns tokenizer_config.json's boolean key, if set.
func (t *realTokenizer) configBool(key string) (v, ok bool) {
	raw, found := t.config[key]
	return v, found && json.Unmarshal(raw, &v) == nil
}

// chatTemplate returns tokenizer_config.json's chat_template: a string, or
// the "default" entry of a list of named templates.
func (t *realTokenizer) chatTemplate() string {
	raw := t.config["chat_template"]
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var named []struct{ Name, Template string }
	if json.Unmarshal(raw, &named) == nil {
		for _, n := range named {
			if n.Name == "default" {
				return n.Template
			}
		}
	}
	return ""
}

// ggufKVs are the tokenizer.* metadata of the tokenizer, with chatTemplate
// (when not empty) overriding tokenizer_config.json's.
func (t *realTokenizer) ggufKVs(chatTemplate string) []ggufKV {
	kvs := []ggufKV{{"tokenizer.ggml.model", t.model}}
	if t.pre != "" {
		kvs = append(kvs, ggufKV{"tokenizer.ggml.pre", t.pre})
	}
	kvs = append(kvs, ggufKV{"tokenizer.ggml.tokens", t.tokens})
	if t.scores != nil {
		kvs = append(kvs, ggufKV{"tokenizer.ggml.scores", t.scores})
	}
	kvs = append(kvs, ggufKV{"tokenizer.ggml.token_type", t.types})
	if t.merges != nil {
		kvs = append(kvs, ggufKV{"tokenizer.ggml.merges", t.merges})
	}
	for _, s := range []struct{ cfg, gguf string }{
		{"bos_token", "bos_token_id"}, {"eos_token", "eos_token_id"},
		{"unk_token", "unknown_token_id"}, {"pad_token", "padding_token_id"},
	} {
		if id, ok := t.configToken(s.cfg); ok {
			kvs = append(kvs, ggufKV{"tokenizer.ggml." + s.gguf, uint32(id)})
		}
	}
	for _, tok := range eotTokens {
		if id, ok := t.ids[tok]; ok {
			kvs = append(kvs, ggufKV{"tokenizer.ggml.eot_token_id", uint32(id)})
			break
		}
	}
	for _, k := range []string{"add_bos_token", "add_eos_token"} {
		if v, ok := t.configBool(k); ok {
			kvs = append(kvs, ggufKV{"tokenizer.ggml." + k, v})
		}
	}
	if t.model == "llama" {
		kvs = append(kvs, ggufKV{"tokenizer.ggml.add_space_prefix", t.spacePfx})
	}
	if chatTemplate == "" {
		chatTemplate = t.chatTemplate()
	}
	if chatTemplate != "" {
		kvs = append(kvs, ggufKV{"tokenizer.chat_template", chatTemplate})
	}
	return kvs
}

// withRealTokenizer replaces the tokenizer.* keys of kvs with those of
// c.Tokenizer; kvs is returned unchanged when c.Tokenizer is empty.
func withRealTokenizer(kvs []ggufKV, c Config) ([]ggufKV, error) {
	if c.Tokenizer == "" {
		return kvs, nil
	}
	t, err := c.loadTokenizer()
	if err != nil {
		return nil, err
	}
	out := make([]ggufKV, 0, len(kvs))
	for _, kv := range kvs {
		if !strings.HasPrefix(kv.key, "tokenizer.") {
			out = append(out, kv)
		}
	}
	return append(out, t.ggufKVs(c.ChatTemplate)...), nil
}

// copyRealTokenizer copies c.Tokenizer and the tokenizer_config.json beside
// it into the Hugging Face directory dir, and sets config.json's
// bos_token_id and eos_token_id to the tokenizer's (null when it has none).
func copyRealTokenizer(dir string, c Config) error {
	t, err := c.loadTokenizer()
	if err != nil {
		return err
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		src := filepath.Join(filepath.Dir(t.path), name)
		if name == "tokenizer.json" {
			src = t.path
		}
		data, err := os.ReadFile(src)
		if os.IsNotExist(err) && name == "tokenizer_config.json" {
			continue
		}
		if err != nil {
			return fmt.Errorf("synth: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	cfgPath := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("synth: %s: %w", cfgPath, err)
	}
	for _, k := range []string{"bos_token", "eos_token"} {
		cfg[k+"_id"] = nil
		if id, ok := t.configToken(k); ok {
			cfg[k+"_id"] = id
		}
	}
	return writeJSON(cfgPath, cfg)
}
