// Package local runs a whole model in this process. Open loads its head
// (embeddings, final norm, LM head, tokenizer), one engine over all its
// blocks and its chat template; Model.Run is the blocks.Runner of `swarm
// generate --local`, and Chat is the chat.Backend of `swarm chat --model`:
// it renders the model's own chat template and encodes it exactly as
// `swarm proxy` does (ingress/openai.ChatTemplate, ingress.EncodePrompt),
// and stops at the model's end-of-generation tokens, so a local chat and a
// chat through the swarm see the same prompt ids.
//
// This package must never import server/, registry/, node/, sim/ or cmd/:
// nothing leaves the process.
package local

import (
	"fmt"

	"github.com/swarmllm/swarm/blocks"
)

// Model is a whole model loaded in this process. Its methods are safe for
// concurrent use; each Run session is used by one goroutine at a time.
type Model struct {
	// Head is the client side of the model: embeddings, final norm, LM
	// head and tokenizer (Tokenizer() is nil for a llama2.c checkpoint
	// without one).
	Head blocks.Head
	// ChatTemplate is the model's Jinja2 chat template (GGUF
	// tokenizer.chat_template, tokenizer_config.json chat_template); ""
	// when it has none.
	ChatTemplate string

	engine blocks.Engine // blocks [0, L)
}

// Open loads the model at path (blocks.Open with opts, such as
// blocks.WithTokenizer or a hub model's blocks.WithOpenFile): its head,
// its chat template and an engine over all its blocks. Every weight is in
// memory when it returns; Close releases them. Errors are blocks.Open's,
// LoadHead's, LoadSpan's and the chat template's (blocks.ErrFormat).
func Open(path string, opts ...blocks.Option) (*Model, error) {
	m, err := blocks.Open(path, opts...)
	if err != nil {
		return nil, err
	}
	defer m.Close() // the weights are in memory once loaded
	tpl, err := m.ChatTemplate()
	if err != nil {
		return nil, fmt.Errorf("local: reading the chat template of %s: %w", path, err)
	}
	head, err := m.LoadHead()
	if err != nil {
		return nil, err
	}
	engine, err := m.LoadSpan(m.Info().Blocks())
	if err != nil {
		return nil, err
	}
	return &Model{Head: head, ChatTemplate: tpl, engine: engine}, nil
}

// Run is the model's blocks.Runner: a fresh session over all blocks with
// room for maxLength positions, and the function that closes it.
func (m *Model) Run(maxLength int) (blocks.Forwarder, func() error, error) {
	s, err := m.engine.NewSession(m.engine.Span(), maxLength)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// Close releases the engine's weights.
func (m *Model) Close() error { return m.engine.Close() }
