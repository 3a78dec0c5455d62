package openai

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// ErrTemplate marks a chat template that does not parse, or that fails (or
// calls raise_exception) while rendering a conversation.
var ErrTemplate = errors.New("openai: chat template")

// Message is one chat message with its content as plain text.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string
	// Content is the message's text.
	Content string
}

// ChatTemplate turns a conversation into the prompt text the model
// continues. It is safe for concurrent use.
type ChatTemplate struct {
	tpl      *exec.Template // nil for the plain fallback
	bos, eos string
}

// PlainTemplate is the fallback for models whose metadata has no chat
// template (base models such as stories260K, never trained on a chat
// format): the messages' contents joined with "\n", without role markers
// and without a generation prompt, so the model continues the conversation
// as plain text. One empty user message renders to "", the empty prompt:
// a chat completion then equals a completion from BOS alone.
func PlainTemplate() *ChatTemplate { return &ChatTemplate{} }

// NewChatTemplate compiles a Jinja2 chat template as found in model
// metadata (GGUF tokenizer.chat_template; Hugging Face tokenizer_config.json
// chat_template), with github.com/nikolalohinski/gonja/v2 configured like
// transformers' apply_chat_template (trim_blocks and lstrip_blocks on). bos
// and eos are the template variables bos_token and eos_token. Errors wrap
// ErrTemplate.
func NewChatTemplate(src, bos, eos string) (*ChatTemplate, error) {
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	cfg.KeepTrailingNewline = true
	loader, err := loaders.NewFileSystemLoader("")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	root, err := loaders.NewShiftedLoader("chat_template", strings.NewReader(src), loader)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	tpl, err := exec.NewTemplate("chat_template", cfg, root, gonja.DefaultEnvironment)
	if err != nil {
		return nil, fmt.Errorf("%w: does not parse: %w", ErrTemplate, err)
	}
	return &ChatTemplate{tpl: tpl, bos: bos, eos: eos}, nil
}

// Plain reports whether this is the plain fallback.
func (t *ChatTemplate) Plain() bool { return t.tpl == nil }

// Render returns the prompt for the messages, ending with the assistant's
// generation prompt (add_generation_prompt = true). A template's leading
// bos_token is removed: the gateway encodes the prompt with BOS first, as
// a template's text "<s>" would otherwise be encoded as plain characters.
// Errors wrap ErrTemplate.
func (t *ChatTemplate) Render(msgs []Message) (string, error) {
	if t.tpl == nil {
		parts := make([]string, len(msgs))
		for i, m := range msgs {
			parts[i] = m.Content
		}
		return strings.Join(parts, "\n"), nil
	}
	list := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	var raised error
	ctx := exec.NewContext(map[string]any{
		"messages":              list,
		"add_generation_prompt": true,
		"bos_token":             t.bos,
		"eos_token":             t.eos,
		"raise_exception": func(msg string) (string, error) {
			raised = fmt.Errorf("%w: %s", ErrTemplate, msg)
			return "", raised
		},
	})
	var b bytes.Buffer
	if err := t.tpl.Execute(&b, ctx); err != nil {
		if raised != nil {
			return "", raised
		}
		return "", fmt.Errorf("%w: rendering: %w", ErrTemplate, err)
	}
	out := b.String()
	if t.bos != "" {
		out = strings.TrimPrefix(out, t.bos)
	}
	return out, nil
}
