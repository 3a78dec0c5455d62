package ingress_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/swarm"
)

// brokenReplica is a FAULT-INJECTION STAND-IN for a full-range replica (a
// real engine cannot be made to fail at a chosen token): it advertises a
// tiny per-token time, so routing prefers it, and its /v1/completions
// streams the given pieces, then drops the connection (or answers 500
// when pieces is nil).
func brokenReplica(t *testing.T, pieces []string) string {
	t.Helper()
	mux := http.NewServeMux()
	var url string
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Info{BackendModel: "engine-model",
			State: api.StateServing, MaxLength: 512,
			ServerInfo: swarm.ServerInfo{ID: url, Model: "stories260K", Span: swarm.Span{Start: 0, End: 5}, FullRange: true,
				Tau: 1e-9, ProtocolVersion: swarm.ProtocolVersion},
		})
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		require.Equal(t, "engine-model", req["model"])
		if pieces == nil {
			http.Error(w, `{"error": {"message": "CUDA out of memory"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range pieces {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"text": p, "index": 0, "finish_reason": nil}}})
			_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
		}
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	url = hs.URL
	return hs.URL
}

// TestRetryOnAnotherRoute: the cheapest route is a replica that fails;
// the request is routed again (the failed replica excluded) and finished by
// the block chain. A replica failing before any text: the non-streamed
// request is simply retried. A replica dying mid-stream after "Once upon a
// time" (REFERENCE.md section 3: tokens 403 407 261 378): the chain resumes
// from the text so far and the stream continues to REFERENCE.md section 2's
// 200 tokens.
func TestRetryOnAnotherRoute(t *testing.T) {
	want := ingresstest.ReferenceText(t)
	chain := ingresstest.StartChain(t)
	for _, tt := range []struct {
		name   string
		pieces []string
	}{
		{"error before any text", nil},
		{"connection lost mid-stream", []string{"Once", " upon", " a", " time"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gw := ingresstest.Gateway(t, chain, []string{brokenReplica(t, tt.pieces)}, nil)
			var got []string
			res, err := gw.Generate(context.Background(), ingress.Request{Model: "stories260K", MaxTokens: 200,
				Sampler: blocks.SamplerConfig{}, API: "completions"}, func(s string) error { got = append(got, s); return nil })
			require.NoError(t, err)
			require.Equal(t, want, strings.Join(got, ""))
			require.Equal(t, 1, res.Retries)
			require.Equal(t, "chain", res.RouteKind)
			require.Equal(t, 200, res.CompletionTokens)
			require.Equal(t, "length", res.FinishReason)
		})
	}
}
