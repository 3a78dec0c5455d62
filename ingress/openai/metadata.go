package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	gguf "github.com/gpustack/gguf-parser-go"
)

// ChatTemplateOf reads the Jinja2 chat template from a model's metadata:
// the GGUF key tokenizer.chat_template
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), or the
// "chat_template" of a Hugging Face directory's tokenizer_config.json (a
// string, or a list of {"name", "template"} of which "default" is used).
// It returns "" for a model without one (llama2.c checkpoints never have
// one). Errors name the file.
func ChatTemplateOf(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		raw, err := os.ReadFile(filepath.Join(path, "tokenizer_config.json"))
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
			return "", fmt.Errorf("%s: %w", filepath.Join(path, "tokenizer_config.json"), err)
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
			return "", fmt.Errorf("%s: chat_template is neither a string nor a list of {name, template}", filepath.Join(path, "tokenizer_config.json"))
		}
		for _, n := range named {
			if n.Name == "default" {
				return n.Template, nil
			}
		}
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	var magic [4]byte
	_, rerr := f.Read(magic[:])
	f.Close()
	if rerr != nil || string(magic[:]) != "GGUF" {
		return "", nil
	}
	g, err := gguf.ParseGGUFFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	kv, ok := g.Header.MetadataKV.Get("tokenizer.chat_template")
	if !ok {
		return "", nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeString {
		return "", fmt.Errorf("%s: tokenizer.chat_template has type %v, want string", path, kv.ValueType)
	}
	return kv.ValueString(), nil
}
