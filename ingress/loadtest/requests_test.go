package loadtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/loadtest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// TestCompletions streams from a fake /v1/completions: events with text
// count as tokens, an empty text does not, and "[DONE]" ends the stream.
func TestCompletions(t *testing.T) {
	var got map[string]any
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/v1/completions", r.URL.Path)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
		w.Header().Set("Content-Type", "text/event-stream")
		for _, text := range []string{"Once", "", " upon", " a"} {
			fmt.Fprintf(w, "data: {\"choices\": [{\"text\": %q}]}\n\n", text)
		}
		fmt.Fprint(w, "data: [DONE]\n\ndata: {\"choices\": [{\"text\": \"late\"}]}\n\n")
	}))
	defer hs.Close()
	s := loadtest.Completions(hs.Client(), hs.URL, "stories260K", "Once", 3)(context.Background())
	require.NoError(t, s.Err)
	require.Equal(t, 3, s.Tokens)
	require.Equal(t, "Once upon a", s.Text, "the texts of the events before [DONE]")
	require.Positive(t, s.TTFT)
	require.GreaterOrEqual(t, s.Total, s.TTFT)
	require.Equal(t, map[string]any{"model": "stories260K", "prompt": "Once", "max_tokens": 3.0, "temperature": 0.0, "stream": true}, got)
}

func TestCompletionsErrors(t *testing.T) {
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	s := loadtest.Completions(busy.Client(), busy.URL, "m", "", 1)(context.Background())
	require.EqualError(t, s.Err, "HTTP 503 Service Unavailable: busy\n")

	garbled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "data: {choices\n\n")
	}))
	defer garbled.Close()
	s = loadtest.Completions(garbled.Client(), garbled.URL, "m", "", 1)(context.Background())
	var syntax *json.SyntaxError
	require.ErrorAs(t, s.Err, &syntax)

	s = loadtest.Completions(http.DefaultClient, "http://127.0.0.1:1", "m", "", 1)(context.Background())
	require.Error(t, s.Err)
}

// TestCompareOverARealSwarm runs both phases against stories260K block
// servers in this process: the client library directly, and the OpenAI
// API of a gateway over the same servers.
func TestCompareOverARealSwarm(t *testing.T) {
	servers := ingresstest.StartChain(t)
	gw := ingresstest.Gateway(t, servers, nil, nil)
	h, err := openai.New(gw)
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	defer hs.Close()

	head := ingresstest.Head(t)
	c, err := client.New(head, servers)
	require.NoError(t, err)
	prompt, err := head.Tokenizer().Encode("", true)
	require.NoError(t, err)
	r := loadtest.Compare(context.Background(), loadtest.Config{Concurrency: 2, Rounds: 1, MaxTokens: 4},
		loadtest.Direct(c, prompt, 4), loadtest.Completions(hs.Client(), hs.URL, head.Info().Name, "", 4))
	require.Zero(t, r.Failed(), "direct: %s; proxy: %s", r.Direct.FirstErr, r.Proxy.FirstErr)
	require.Equal(t, 8, r.Direct.Tokens, "two requests of four greedy tokens")
	require.Positive(t, r.Proxy.Tokens)
	require.Positive(t, r.Direct.TTFTp50)
	require.Positive(t, r.Proxy.TTFTp50)

	dead := loadtest.Direct(c, prompt, 0)(context.Background())
	require.Error(t, dead.Err, "a session of no tokens is refused")
}
