package ingress

import (
	"strings"

	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// EncodePrompt returns the ids of a session's input text. first says
// whether it begins the session.
//
// Plain text (rendered false) is encoded as a completion prompt: with the
// special tokens the tokenizer puts before a text (BOS for Llama and
// Gemma, none for Qwen) on the first call, as transformers' encode(text)
// and llama.cpp's tokenize(add_special=true) do.
//
// A chat template's rendering (rendered true) already holds its special
// tokens as text ("<|begin_of_text|>", "<|im_start|>", "<start_of_turn>"),
// so it is encoded as transformers' apply_chat_template(tokenize=True)
// does: with add_special_tokens=False, so a template that writes its BOS
// gets exactly one. A leading bosText becomes the BOS id explicitly,
// because SentencePiece tokenizers of the llama2.c kind read "<s>" in text
// as characters; the rest of the text is encoded without special tokens,
// its control and user-defined pieces matched as ids (tokenizer.BPE's
// EncodeSpecial for SentencePiece vocabularies such as a Gemma 3 GGUF's;
// byte-level and Gemma tokenizer.json tokenizers match their added tokens
// in Encode).
func EncodePrompt(tok tokenizer.Tokenizer, bosText, text string, rendered, first bool) ([]int, error) {
	if !rendered {
		return tok.Encode(text, first)
	}
	var ids []int
	if rest, ok := strings.CutPrefix(text, bosText); ok && first && bosText != "" && tok.BOS() >= 0 {
		ids, text = []int{tok.BOS()}, rest
	}
	var more []int
	var err error
	if sp, ok := tok.(interface{ EncodeSpecial(string) ([]int, error) }); ok {
		more, err = sp.EncodeSpecial(text) // SentencePiece: match the template's special tokens
	} else {
		more, err = tok.Encode(text, false) // byte-level and Gemma tokenizer.json match their added tokens
	}
	if err != nil {
		return nil, err
	}
	return append(ids, more...), nil
}

// replicaPrompt is the text a replica (an OpenAI-compatible engine) gets
// for input: a chat template's rendering loses its leading bosText,
// because the engine's /v1/completions puts its own BOS first, as it does
// for any prompt (vLLM, llama.cpp's server).
func replicaPrompt(bosText, text string, rendered bool) string {
	if rendered && bosText != "" {
		return strings.TrimPrefix(text, bosText)
	}
	return text
}
