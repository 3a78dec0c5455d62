package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// startIngress serves the OpenAI API of a gateway over three in-process
// block servers.
func startIngress(t *testing.T, configure func(*ingress.Config)) string {
	t.Helper()
	gw := ingresstest.Gateway(t, ingresstest.StartChain(t), nil, configure)
	h, err := openai.New(gw)
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// collect joins a stream's text and returns its last chunk.
func collect(t *testing.T, seq func(func(client.Chunk, error) bool)) (string, client.Chunk) {
	t.Helper()
	var text strings.Builder
	var last client.Chunk
	n := 0
	for ch, err := range seq {
		require.NoError(t, err)
		text.WriteString(ch.Text)
		last = ch
		n++
	}
	require.Greater(t, n, 1)
	return text.String(), last
}

// TestIngressGenerateAndChat streams REFERENCE.md section 2's text through
// the ingress with Generate (empty prompt) and Chat (one empty user
// message, the plain fallback template), greedy, 200 tokens.
func TestIngressGenerateAndChat(t *testing.T) {
	want := ingresstest.ReferenceText(t)
	c, err := client.NewIngress(startIngress(t, nil))
	require.NoError(t, err)
	ctx := context.Background()
	s := client.Sampling{MaxTokens: 200, Temperature: 0}
	usage := &client.IngressUsage{PromptTokens: 1, CompletionTokens: 200, TotalTokens: 201}

	text, last := collect(t, c.Generate(ctx, "stories260K", "", s))
	require.Equal(t, want, text)
	require.Equal(t, client.Chunk{FinishReason: "length", Usage: usage}, last)

	text, last = collect(t, c.Chat(ctx, "stories260K", []client.ChatMessage{{Role: "user", Content: ""}}, s))
	require.Equal(t, want, text)
	require.Equal(t, client.Chunk{FinishReason: "length", Usage: usage}, last)

	s.Stop = []string{"Lily"}
	text, last = collect(t, c.Generate(ctx, "stories260K", "", s))
	require.Equal(t, want[:strings.Index(want, "Lily")], text)
	require.Equal(t, "stop", last.FinishReason)

	// Stopping early ends the request.
	n := 0
	for range c.Generate(ctx, "stories260K", "", client.Sampling{MaxTokens: 200}) {
		n++
		if n == 3 {
			break
		}
	}
	require.Equal(t, 3, n)
}

// TestIngressErrors checks that the ingress's errors come back as
// *IngressError.
func TestIngressErrors(t *testing.T) {
	keys, err := ingress.ParseKeys(strings.NewReader("sk-test-123456789 tester\n"))
	require.NoError(t, err)
	base := startIngress(t, func(c *ingress.Config) { c.Keys = keys })

	noKey, err := client.NewIngress(base)
	require.NoError(t, err)
	var ie *client.IngressError
	for _, err := range noKey.Generate(context.Background(), "stories260K", "", client.Sampling{MaxTokens: 1}) {
		require.ErrorAs(t, err, &ie)
	}
	require.Equal(t, 401, ie.Status)
	require.Equal(t, "invalid_api_key", ie.Code)
	require.True(t, errors.Is(ie, client.ErrIngress))

	c, err := client.NewIngress(base, client.WithAPIKey("sk-test-123456789"), client.WithTrustedProviders("nobody"))
	require.NoError(t, err)
	for _, err := range c.Chat(context.Background(), "gpt-4", []client.ChatMessage{{Role: "user", Content: "hi"}}, client.Sampling{}) {
		require.ErrorAs(t, err, &ie)
	}
	require.Equal(t, 404, ie.Status)
	require.Equal(t, "model_not_found", ie.Code)
	require.Equal(t, "model", ie.Param)
	for _, err := range c.Generate(context.Background(), "stories260K", "", client.Sampling{MaxTokens: 1}) {
		require.ErrorAs(t, err, &ie)
	}
	require.Equal(t, 503, ie.Status)
	require.Equal(t, "no_route", ie.Code)

	_, err = client.NewIngress("127.0.0.1:8000")
	require.ErrorIs(t, err, client.ErrBadOption)
	_, err = client.NewIngress("http://x", client.WithTrustedProviders())
	require.ErrorIs(t, err, client.ErrBadOption)
}
