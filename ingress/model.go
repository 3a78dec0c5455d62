package ingress

import (
	"fmt"
	"strings"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// LoadModel loads what an ingress serves of a model: its head (embeddings,
// final norm, LM head and tokenizer; no block weights), its chat template
// and the text of its BOS and EOS pieces, from a model file or directory
// (blocks.Open) and an optional tokenizer file (blocks.WithTokenizer; ""
// uses the model's own). opts are further blocks.Open options, such as a
// hub model's blocks.WithOpenFile (hub/modelsrc), through which only the
// head's bytes are read. Created is now.
//
// Errors: blocks.Open's and LoadHead's, and ErrBadOption for a model
// without a tokenizer (text cannot be served without one).
func LoadModel(path, tokenizerPath string, opts ...blocks.Option) (Model, error) {
	if tokenizerPath != "" {
		opts = append(opts, blocks.WithTokenizer(tokenizerPath))
	}
	m, err := blocks.Open(path, opts...)
	if err != nil {
		return Model{}, err
	}
	defer m.Close()
	head, err := m.LoadHead()
	if err != nil {
		return Model{}, err
	}
	tok := head.Tokenizer()
	if tok == nil {
		return Model{}, fmt.Errorf("%w: model %s comes without a tokenizer: pass --tokenizer PATH at the same position", ErrBadOption, path)
	}
	tpl, err := m.ChatTemplate()
	if err != nil {
		return Model{}, fmt.Errorf("ingress: reading the chat template of %s: %w", path, err)
	}
	im := Model{Name: head.Info().Name, Head: head, ChatTemplate: tpl, Created: time.Now().Unix(),
		MaxPromptBytes: maxPromptBytes(head.Info().MaxSeqLen, tok)}
	im.BOSText, im.EOSText = SpecialTexts(tok)
	return im, nil
}

// SpecialTexts returns the text of tok's BOS and EOS pieces ("<s>",
// "</s>", "<|begin_of_text|>"), trimmed: a chat template's bos_token and
// eos_token, and the BOS text EncodePrompt takes. Both are "" for a
// tokenizer that cannot name its pieces.
func SpecialTexts(tok tokenizer.Tokenizer) (bos, eos string) {
	if p, ok := tok.(interface{ Piece(int) string }); ok {
		return strings.TrimSpace(p.Piece(tok.BOS())), strings.TrimSpace(p.Piece(tok.EOS()))
	}
	return "", ""
}

// maxPromptBytes is the most input bytes contextLen tokens can encode: a
// token stands for at most the longest decoded piece of the vocabulary
// (plus one byte for a dropped leading space). 0 when the context is
// unknown.
func maxPromptBytes(contextLen int, tok tokenizer.Tokenizer) int {
	if contextLen <= 0 {
		return 0
	}
	longest := 1
	for id := range tok.VocabSize() {
		longest = max(longest, len(tok.Decode(tok.EOS(), id))+1)
	}
	return contextLen * longest
}
