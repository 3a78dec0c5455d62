package chat_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/client/chat"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// startIngress serves the OpenAI API of an in-process gateway over a chain
// of three stories260K block servers.
func startIngress(t *testing.T) *client.Ingress {
	t.Helper()
	h, err := openai.New(ingresstest.Gateway(t, ingresstest.StartChain(t), nil, nil))
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	ing, err := client.NewIngress(hs.URL)
	require.NoError(t, err)
	return ing
}

// TestSession: one empty user message to stories260K (no chat template:
// the plain fallback renders it as the empty prompt) at temperature 0
// streams REFERENCE.md section 2's text, which joins the conversation;
// an error the ingress answers leaves the conversation as it was; Reset
// keeps the system prompt only.
func TestSession(t *testing.T) {
	ing := startIngress(t)
	ctx := context.Background()
	model, err := chat.FirstModel(ctx, ing)
	require.NoError(t, err)
	require.Equal(t, "stories260K", model)

	b, err := chat.Remote(ing, model)
	require.NoError(t, err)
	s, err := chat.New(b, chat.Config{Sampling: client.Sampling{MaxTokens: 200}})
	require.NoError(t, err)
	var streamed strings.Builder
	r, err := s.Send(ctx, "", &streamed)
	require.NoError(t, err)
	want := ingresstest.ReferenceText(t)
	require.Equal(t, want, r.Text)
	require.Equal(t, want, streamed.String())
	require.Equal(t, "length", r.FinishReason)
	require.Equal(t, &client.IngressUsage{PromptTokens: 1, CompletionTokens: 200, TotalTokens: 201}, r.Usage)
	require.Equal(t, []client.ChatMessage{{Role: "user", Content: ""}, {Role: "assistant", Content: want}}, s.Messages())

	nope, err := chat.Remote(ing, "nope")
	require.NoError(t, err)
	bad, err := chat.New(nope, chat.Config{System: "be brief"})
	require.NoError(t, err)
	_, err = bad.Send(ctx, "hi", &streamed)
	var ie *client.IngressError
	require.True(t, errors.As(err, &ie), "%v", err)
	require.Equal(t, 404, ie.Status)
	require.Equal(t, []client.ChatMessage{{Role: "system", Content: "be brief"}}, bad.Messages())

	s.Reset()
	require.Empty(t, s.Messages())
	_, err = chat.Remote(ing, "")
	require.ErrorIs(t, err, client.ErrBadOption)
	_, err = chat.New(nil, chat.Config{})
	require.ErrorIs(t, err, client.ErrBadOption)
}
