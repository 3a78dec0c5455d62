package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// ErrTemplate marks a chat template that does not parse, or that fails (or
// calls raise_exception) while rendering a conversation.
var ErrTemplate = errors.New("openai: chat template")

// Message is one chat message as a chat template sees it: a dict with
// "role" and "content", and the other keys only when set (a template
// tests them with "is defined").
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the message's text.
	Content string `json:"content"`
	// ReasoningContent is an assistant message's reasoning
	// ("reasoning_content", as vLLM returns it and Qwen3's template reads
	// it); nil leaves the key out.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	// ToolCalls are an assistant message's tool calls ("tool_calls").
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is a tool message's "tool_call_id".
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the message's "name" (a tool message's function name).
	Name string `json:"name,omitempty"`
}

// ToolCall is one tool call of an assistant message, as the OpenAI API
// writes it.
type ToolCall struct {
	// ID is the call's id; "" leaves the key out.
	ID string `json:"id,omitempty"`
	// Type is "function"; "" leaves the key out.
	Type string `json:"type,omitempty"`
	// Function is the called function.
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction is the function of a tool call.
type ToolCallFunction struct {
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments are the arguments as JSON text (a string, as in the OpenAI
	// API: a template that writes "arguments | tojson" quotes it).
	Arguments string `json:"arguments"`
}

// Conversation is what a chat template renders: the arguments of
// transformers' apply_chat_template.
type Conversation struct {
	// Messages are the messages ("messages").
	Messages []Message
	// Tools is the JSON array of tool definitions ("tools"), objects kept
	// in their order for tojson; nil or "null" leaves tools undefined.
	Tools json.RawMessage
	// AddGenerationPrompt ends the text with the header of the assistant's
	// turn ("add_generation_prompt").
	AddGenerationPrompt bool
	// Now is the time strftime_now formats, in its location.
	Now time.Time
	// Vars are further template variables, such as Qwen3's
	// enable_thinking (vLLM's chat_template_kwargs); they do not replace
	// the variables above, bos_token or eos_token.
	Vars map[string]any
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
// chat_template) to render as transformers' apply_chat_template does:
// github.com/nikolalohinski/gonja/v2 with trim_blocks and lstrip_blocks,
// the template's trailing newline dropped, and the extension layer of
// jinja.go (conditional expressions inside brackets, raise_exception,
// strftime_now, transformers' tojson, ordered dicts). bos and eos are the
// template variables bos_token and eos_token. Errors wrap ErrTemplate.
func NewChatTemplate(src, bos, eos string) (*ChatTemplate, error) {
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	cfg.KeepTrailingNewline = false
	loader, err := loaders.NewFileSystemLoader("")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	root, err := loaders.NewShiftedLoader("chat_template", strings.NewReader(rewriteConditionals(src)), loader)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	tpl, err := exec.NewTemplate("chat_template", cfg, root, chatEnvironment)
	if err != nil {
		return nil, fmt.Errorf("%w: does not parse: %w", ErrTemplate, err)
	}
	return &ChatTemplate{tpl: tpl, bos: bos, eos: eos}, nil
}

// Plain reports whether this is the plain fallback.
func (t *ChatTemplate) Plain() bool { return t.tpl == nil }

// Apply renders the conversation to the exact text of transformers'
// apply_chat_template(..., tokenize=False), special tokens such as
// bos_token and "<|im_start|>" included as text. The plain fallback joins
// the contents. Errors wrap ErrTemplate; a raise_exception call's message
// ends the error.
func (t *ChatTemplate) Apply(c Conversation) (out string, err error) {
	if t.tpl == nil {
		parts := make([]string, len(c.Messages))
		for i, m := range c.Messages {
			parts[i] = m.Content
		}
		return strings.Join(parts, "\n"), nil
	}
	vars := make(map[string]any, len(c.Vars)+8)
	for k, v := range c.Vars {
		vars[k] = v
	}
	list := make([]any, len(c.Messages))
	for i, m := range c.Messages {
		if list[i], err = messageValue(m); err != nil {
			return "", fmt.Errorf("%w: messages[%d]: %w", ErrTemplate, i, err)
		}
	}
	vars["messages"] = list
	if len(c.Tools) > 0 && string(c.Tools) != "null" {
		if vars["tools"], err = decodeJSON(c.Tools); err != nil {
			return "", fmt.Errorf("%w: tools: %w", ErrTemplate, err)
		}
	}
	vars["add_generation_prompt"] = c.AddGenerationPrompt
	vars["bos_token"], vars["eos_token"] = t.bos, t.eos
	var r raised
	for k, v := range renderGlobals(c.Now, &r) {
		vars[k] = v
	}
	defer func() { // gonja panics on some operand types (e.g. "%" on strings)
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("%w: rendering: %v", ErrTemplate, p)
		}
	}()
	var b bytes.Buffer
	err = t.tpl.Execute(&b, exec.NewContext(vars))
	switch {
	case r.called:
		return "", fmt.Errorf("%w: raise_exception: %s", ErrTemplate, r.msg)
	case err != nil:
		return "", fmt.Errorf("%w: rendering: %w", ErrTemplate, err)
	}
	return b.String(), nil
}

// Prompt returns Apply's text without a leading bos_token: a prompt for
// an engine that puts its own BOS before any prompt (an OpenAI
// /v1/completions endpoint). The handler sends Apply's text itself, marked
// ingress.Request.Rendered, so that it is encoded as transformers'
// apply_chat_template(tokenize=True) does. Errors wrap ErrTemplate.
func (t *ChatTemplate) Prompt(c Conversation) (string, error) {
	out, err := t.Apply(c)
	if err != nil {
		return "", err
	}
	if t.bos != "" {
		out = strings.TrimPrefix(out, t.bos)
	}
	return out, nil
}

// messageValue is the template value of a message: an ordered dict of its
// set fields, in the OpenAI API's order.
func messageValue(m Message) (any, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return decodeJSON(raw)
}
