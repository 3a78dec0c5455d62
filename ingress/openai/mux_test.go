package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/openai"
)

// TestJSONErrors: a mux's unmatched requests get OpenAI's error JSON (404,
// or 405 with Allow), matched ones its handlers.
func TestJSONErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/state", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "state") })
	mux.HandleFunc("/ws", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ws") })
	hs := httptest.NewServer(openai.JSONErrors(mux))
	defer hs.Close()
	tests := []struct {
		method, path string
		status       int
		code, allow  string
		body         string
	}{
		{"GET", "/api/v1/state", 200, "", "", "state"},
		{"POST", "/ws", 200, "", "", "ws"},
		{"GET", "/nope", 404, "unknown_url", "", ""},
		{"POST", "/api/v1/state", 405, "method_not_allowed", "GET", ""},
		{"DELETE", "/api/v1/state", 405, "method_not_allowed", "GET", ""},
	}
	for _, tt := range tests {
		resp := send(t, tt.method, hs.URL+tt.path, nil, nil)
		require.Equal(t, tt.status, resp.StatusCode, tt.path)
		require.Equal(t, tt.allow, resp.Header.Get("Allow"))
		if tt.code == "" {
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.body, string(b))
			continue
		}
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var e openai.ErrorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		require.Equal(t, tt.code, *e.Error.Code)
		require.Contains(t, e.Error.Message, tt.method+" "+tt.path)
		require.NotContains(t, e.Error.Message, "openai:")
	}
}
