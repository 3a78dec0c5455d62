package openai

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChatTemplates renders real chat templates (Llama 2 chat's, TinyLlama
// / Zephyr's, ChatML as Qwen and others ship it; copied from the models'
// tokenizer_config.json) and checks the exact prompts that transformers'
// apply_chat_template(add_generation_prompt=True) documents for them.
func TestChatTemplates(t *testing.T) {
	conv := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi!"}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Tell a story."}}
	tests := []struct {
		file string
		want string
	}{
		{"llama2.jinja", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi! [/INST] Hello. </s><s>[INST] Tell a story. [/INST]"},
		{"zephyr.jinja", "<|system|>\nBe brief.</s>\n<|user|>\nHi!</s>\n<|assistant|>\nHello.</s>\n<|user|>\nTell a story.</s>\n<|assistant|>\n"},
		{"chatml.jinja", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nTell a story.<|im_end|>\n<|im_start|>assistant\n"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile("testdata/" + tt.file)
			require.NoError(t, err)
			tpl, err := NewChatTemplate(string(src), "<s>", "</s>")
			require.NoError(t, err)
			got, err := tpl.Prompt(Conversation{Messages: conv, AddGenerationPrompt: true})
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestChatTemplateErrors checks raise_exception and a template that does
// not parse.
func TestChatTemplateErrors(t *testing.T) {
	src, err := os.ReadFile("testdata/llama2.jinja")
	require.NoError(t, err)
	tpl, err := NewChatTemplate(string(src), "<s>", "</s>")
	require.NoError(t, err)
	_, err = tpl.Prompt(Conversation{Messages: []Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}})
	require.ErrorIs(t, err, ErrTemplate)
	require.ErrorContains(t, err, "Conversation roles must alternate user/assistant/user/assistant/...")

	_, err = NewChatTemplate("{% for m in messages %}{{ m['content'] }", "", "")
	require.ErrorIs(t, err, ErrTemplate)
}

// TestPlainTemplate pins the fallback: contents joined by newlines, and one
// empty user message is the empty prompt.
func TestPlainTemplate(t *testing.T) {
	p := PlainTemplate()
	require.True(t, p.Plain())
	for _, tt := range []struct {
		msgs []Message
		want string
	}{
		{[]Message{{Role: "user", Content: ""}}, ""},
		{[]Message{{Role: "user", Content: "Once upon a time"}}, "Once upon a time"},
		{[]Message{{Role: "system", Content: "A story."}, {Role: "user", Content: "Lily"}, {Role: "assistant", Content: "had a ball."}}, "A story.\nLily\nhad a ball."},
	} {
		got, err := p.Prompt(Conversation{Messages: tt.msgs, AddGenerationPrompt: true})
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
}
