package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// EndOfGenerationer is implemented by tokenizers that know the ids ending a
// generation (RankedBPE, BPE, the Llama-2 tokenizer.json runner).
type EndOfGenerationer interface {
	// EndOfGeneration returns the ids that end a generation, ascending;
	// the caller must not modify the slice.
	EndOfGeneration() []int
}

// BOSAdder is implemented by tokenizers that say whether Encode(text, true)
// puts BOS first.
type BOSAdder interface {
	// AddsBOS reports whether Encode(text, true) puts the BOS id first.
	AddsBOS() bool
}

// EndOfGeneration returns the ids that end a generation with t, ascending:
// t's own set when it implements EndOfGenerationer, else its BOS and EOS
// (llama2.c's run.c stops at BOS; ids < 0 left out). A nil t gives nil.
func EndOfGeneration(t Tokenizer) []int {
	if t == nil {
		return nil
	}
	if e, ok := t.(EndOfGenerationer); ok {
		return e.EndOfGeneration()
	}
	return idSet(t.BOS(), t.EOS())
}

// AddsBOS reports whether t.Encode(text, true) puts the BOS id first: t's
// answer when it implements BOSAdder, else whether it has a BOS id.
func AddsBOS(t Tokenizer) bool {
	if a, ok := t.(BOSAdder); ok {
		return a.AddsBOS()
	}
	return t.BOS() >= 0
}

// idSet returns the ids >= 0 among ids, ascending, without repeats.
func idSet(ids ...int) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		if id >= 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SentencePiece tokenizers (llama2.c, tokenizer.model, GGUF "llama",
// Llama-2 tokenizer.json) end a generation at BOS or EOS, as llama2.c's
// run.c does ("the BOS (=1) token delimits sequences").

// EndOfGeneration returns BOS, EOS, a GGUF's eot_token_id and
// eom_token_id, and the control pieces whose text llama.cpp takes for an
// end of generation (endOfGenerationTokens: Gemma's <end_of_turn> in a
// GGUF with tokenizer.ggml.model "llama"), ascending.
func (t *BPE) EndOfGeneration() []int { return t.eog }

// EndOfGeneration returns BOS and EOS.
func (h *hfTokenizer) EndOfGeneration() []int { return idSet(h.bos, h.eos) }

// AddsBOS reports whether Encode(text, true) puts BOS first: whether BOS is
// the first special token the post-processor (or tokenizer_config.json's
// add_bos_token) puts before a text. False for Qwen, which has no BOS.
func (t *RankedBPE) AddsBOS() bool {
	return t.bos >= 0 && len(t.prefix) > 0 && t.prefix[0] == t.bos
}

// EndOfGeneration returns the ids that end a generation, ascending: EOS,
// EOT, EOM, the ids the model's generation_config.json or config.json
// give as eos_token_id (beside tokenizer.json), and every token whose text
// llama.cpp takes for an end of generation (endOfGenerationTokens and the
// fill-in-the-middle pad, repository and file-separator tokens), so that a
// tokenizer.json and the GGUF converted from it end at the same ids.
func (t *RankedBPE) EndOfGeneration() []int { return t.eog }

// endOfGenerationTokens are the texts llama.cpp's llama_vocab::impl::load
// (src/llama-vocab.cpp of the llama.cpp node-llama-cpp 3.22.1 builds)
// puts in special_eog_ids.
var endOfGenerationTokens = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~[",
}

// fimEndTokens are the fill-in-the-middle tokens llama.cpp also ends a
// generation at when the GGUF names none of its own: the first text of each
// list present in the vocabulary (pad, repository, file separator).
var fimEndTokens = [][]string{
	{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
	{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
	{"<|file_sep|>"},
}

// endOfGeneration computes RankedBPE.EndOfGeneration from the vocabulary,
// the special ids, fim (GGUF's FIM ids) and extra (EOM, config files'
// eos_token_id), as llama.cpp
// does, including its rule for o200k_harmony-like vocabularies: "<|end|>"
// does not end a generation when "<|return|>" and "<|call|>" (or
// "<|calls|>" and "<|flush|>") do. Unlike llama.cpp, only control tokens
// are matched by text (addedToken.control): Qwen3's vocabulary holds
// "</s>" as ordinary text and Gemma 3's as a non-special added token
// (HTML strike-through), which llama.cpp would take for an end.
func (t *RankedBPE) endOfGeneration(fim []int, extra []int) []int {
	ids := append([]int{t.eos, t.eot}, extra...)
	for i, list := range fimEndTokens {
		if i < len(fim) && fim[i] >= 0 {
			ids = append(ids, fim[i])
			continue
		}
		for _, c := range list {
			if a, ok := t.added.byContent[c]; ok && a.control {
				ids = append(ids, a.id)
				break
			}
		}
	}
	has := map[string]bool{}
	for _, c := range endOfGenerationTokens {
		if a, ok := t.added.byContent[c]; ok && a.control {
			ids, has[c] = append(ids, a.id), true
		}
	}
	if end, ok := t.added.byContent["<|end|>"]; ok && (has["<|return|>"] && has["<|call|>"] || has["<|calls|>"] && has["<|flush|>"]) {
		ids = slices.DeleteFunc(ids, func(id int) bool { return id == end.id })
	}
	return idSet(ids...)
}

// hfGenerationConfig is the eos_token_id of a Hugging Face model's
// generation_config.json or config.json: one id, a list of ids, or null.
type hfGenerationConfig struct {
	EOSTokenID json.RawMessage `json:"eos_token_id"`
}

// configEOSIDs reads eos_token_id from generation_config.json and
// config.json in dir, when present (transformers' generate stops at any of
// them). A file that is not JSON, or an eos_token_id that is neither an id
// nor a list of ids, gives ErrFormat naming the file.
func configEOSIDs(dir string) ([]int, error) {
	var out []int
	for _, name := range []string{"generation_config.json", "config.json"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("tokenizer: read %s: %w", name, err)
		}
		var c hfGenerationConfig
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("%w: %s: want a JSON object: %w", ErrFormat, path, err)
		}
		ids, err := tokenIDs(c.EOSTokenID)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: eos_token_id: %w", ErrFormat, path, err)
		}
		out = append(out, ids...)
	}
	return out, nil
}

// tokenIDs reads a token id, a list of ids or null.
func tokenIDs(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		raw = json.RawMessage(fmt.Sprintf("[%d]", one))
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf("%s: want a token id or a list of token ids", raw)
	}
	for _, id := range ids {
		if id < 0 || id > 1<<30 {
			return nil, fmt.Errorf("token id %d out of range", id)
		}
	}
	return ids, nil
}

// looksSpecial reports whether an added token that tokenizer.json does not
// mark special is a control token anyway, as llama.cpp's
// convert_hf_to_gguf.py (does_token_look_special) decides: "<|...|>",
// "<｜...｜>", "<unused...>" and Gemma's "<pad>", "<mask>", "<2mass>",
// "[@BOS@]".
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") ||
		strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>") ||
		strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">")
}
