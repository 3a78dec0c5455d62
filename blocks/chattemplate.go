package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	gguf "github.com/gpustack/gguf-parser-go"
)

// ChatTemplate returns the model's Jinja2 chat template from the metadata
// read at Open (no file is parsed again): the GGUF key
// tokenizer.chat_template (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md),
// or the "chat_template" of a Hugging Face directory's
// tokenizer_config.json (a string, or a list of {"name", "template"} of
// which "default" is used). It returns "" for a model without one
// (llama2.c checkpoints never have one). Errors name the file and what is
// wrong with the value.
func (m *Model) ChatTemplate() (string, error) {
	if m.chatTemplate == nil {
		return "", nil
	}
	return m.chatTemplate()
}

// ggufChatTemplate returns the chat template of parsed GGUF metadata.
func ggufChatTemplate(path string, kvs gguf.GGUFMetadataKVs) func() (string, error) {
	kv, ok := kvs.Get("tokenizer.chat_template")
	if !ok {
		return nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeString {
		err := fmt.Errorf("%w: %s: tokenizer.chat_template has type %v, want string", ErrFormat, path, kv.ValueType)
		return func() (string, error) { return "", err }
	}
	tpl := kv.ValueString()
	return func() (string, error) { return tpl, nil }
}

// hfChatTemplate reads the chat template of a Hugging Face directory's
// tokenizer_config.json ("" when the file or the key is absent).
func hfChatTemplate(dir string) (string, error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrFormat, path, err)
	}
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(cfg.ChatTemplate, &s) == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err != nil {
		return "", fmt.Errorf("%w: %s: chat_template is neither a string nor a list of {name, template}", ErrFormat, path)
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
	}
	return "", nil
}
