package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// TestRequestShapesMatchGoOpenAI decodes requests written by
// github.com/sashabaranov/go-openai (v1.43.0) into this package's request
// types.
func TestRequestShapesMatchGoOpenAI(t *testing.T) {
	seed := 42
	creq := goopenai.CompletionRequest{Model: "m", Prompt: "Once", MaxTokens: 12, Temperature: 0.5, TopP: 0.9, N: 1,
		Stream: true, Stop: []string{"a", "b"}, Seed: &seed, StreamOptions: &goopenai.StreamOptions{IncludeUsage: true}}
	b, err := json.Marshal(creq)
	require.NoError(t, err)
	var c openai.CompletionRequest
	require.NoError(t, json.Unmarshal(b, &c))
	require.Equal(t, "m", c.Model)
	require.JSONEq(t, `"Once"`, string(c.Prompt))
	require.Equal(t, 12, *c.MaxTokens)
	require.InDelta(t, 0.5, *c.Temperature, 1e-6)
	require.InDelta(t, 0.9, *c.TopP, 1e-6)
	require.Equal(t, 1, *c.N)
	require.True(t, c.Stream)
	require.True(t, c.StreamOptions.IncludeUsage)
	require.JSONEq(t, `["a","b"]`, string(c.Stop))
	require.Equal(t, int64(42), *c.Seed)

	chreq := goopenai.ChatCompletionRequest{Model: "m", MaxTokens: 7, Messages: []goopenai.ChatCompletionMessage{
		{Role: "system", Content: "sys"}, {Role: "user", MultiContent: []goopenai.ChatMessagePart{{Type: "text", Text: "hi "}, {Type: "text", Text: "there"}}}}}
	b, err = json.Marshal(chreq)
	require.NoError(t, err)
	var ch openai.ChatRequest
	require.NoError(t, json.Unmarshal(b, &ch))
	require.Equal(t, 7, *ch.MaxTokens)
	require.Len(t, ch.Messages, 2)
	require.Equal(t, "user", ch.Messages[1].Role)
	require.Nil(t, ch.Temperature, "go-openai omits temperature 0: the default (1) applies")
}

// TestGoOpenAIClient runs go-openai's client against the handler: a
// completion and a streamed chat completion with a seed give the same text
// as this package's own requests with the same settings, and an unknown
// model comes back as go-openai's *APIError.
func TestGoOpenAIClient(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	cfg := goopenai.DefaultConfig("none")
	cfg.BaseURL = hs.URL + "/v1"
	c := goopenai.NewClientWithConfig(cfg)
	ctx := context.Background()
	seed := 11

	// go-openai cannot send temperature 0 (omitempty): temperature 1 with a
	// seed is reproducible instead.
	resp, err := c.CreateCompletion(ctx, goopenai.CompletionRequest{Model: "stories260K", Prompt: "", MaxTokens: 30, Seed: &seed})
	require.NoError(t, err)
	require.Equal(t, "text_completion", resp.Object)
	require.Equal(t, "length", resp.Choices[0].FinishReason)
	require.Equal(t, 30, resp.Usage.CompletionTokens)
	own := post(t, hs.URL+"/v1/completions", map[string]any{"model": "stories260K", "prompt": "", "max_tokens": 30, "seed": seed, "temperature": 1}, nil)
	var oc openai.Completion
	require.NoError(t, json.NewDecoder(own.Body).Decode(&oc))
	require.Equal(t, oc.Choices[0].Text, resp.Choices[0].Text)

	stream, err := c.CreateChatCompletionStream(ctx, goopenai.ChatCompletionRequest{Model: "stories260K", MaxTokens: 30, Seed: &seed,
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "Lily"}}, Stream: true})
	require.NoError(t, err)
	var text strings.Builder
	finish := goopenai.FinishReason("")
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, "chat.completion.chunk", r.Object)
		if len(r.Choices) > 0 {
			text.WriteString(r.Choices[0].Delta.Content)
			if r.Choices[0].FinishReason != "" {
				finish = r.Choices[0].FinishReason
			}
		}
	}
	stream.Close()
	require.Equal(t, goopenai.FinishReasonLength, finish)
	own = post(t, hs.URL+"/v1/chat/completions", map[string]any{"model": "stories260K", "max_tokens": 30, "seed": seed, "temperature": 1,
		"messages": []map[string]any{{"role": "user", "content": "Lily"}}}, nil)
	var occ openai.ChatCompletion
	require.NoError(t, json.NewDecoder(own.Body).Decode(&occ))
	require.Equal(t, occ.Choices[0].Message.Content, text.String())
	require.NotEmpty(t, text.String())

	_, err = c.CreateCompletion(ctx, goopenai.CompletionRequest{Model: "nope", Prompt: "x", MaxTokens: 1})
	var apiErr *goopenai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.HTTPStatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
}
