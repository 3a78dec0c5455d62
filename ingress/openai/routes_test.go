package openai_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// TestRoutes: models.retrieve, unknown paths (404) and wrong methods (405
// with Allow), all errors in OpenAI's JSON shape with messages free of Go
// package prefixes.
func TestRoutes(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	tests := []struct {
		method, path string
		status       int
		code, allow  string
		msg          string
	}{
		{"GET", "/v1/models/gpt-4", 404, "model_not_found", "", `the model does not exist: "gpt-4"`},
		{"GET", "/v1/models/org/gpt-4", 404, "model_not_found", "", `"org/gpt-4"`},
		{"GET", "/v1/embeddings", 404, "unknown_url", "", "GET /v1/embeddings is not an endpoint of this API"},
		{"POST", "/v2/completions", 404, "unknown_url", "", "POST /v2/completions is not an endpoint"},
		{"POST", "/v1/models", 405, "method_not_allowed", "GET", "POST /v1/models (this endpoint serves GET)"},
		{"DELETE", "/v1/models/stories260K", 405, "method_not_allowed", "GET", "DELETE"},
		{"GET", "/v1/completions", 405, "method_not_allowed", "POST", "GET /v1/completions"},
		{"PUT", "/v1/chat/completions", 405, "method_not_allowed", "POST", "PUT"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp := send(t, tt.method, hs.URL+tt.path, nil, nil)
			require.Equal(t, tt.status, resp.StatusCode)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.Equal(t, tt.allow, resp.Header.Get("Allow"))
			var e openai.ErrorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.Equal(t, tt.code, *e.Error.Code)
			require.Contains(t, e.Error.Message, tt.msg)
			require.NotContains(t, e.Error.Message, "openai:")
			require.NotContains(t, e.Error.Message, "ingress:")
		})
	}

	resp, err := http.Get(hs.URL + "/v1/models/stories260K")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var m openai.ModelObject
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	require.Equal(t, "stories260K", m.ID)
	require.Equal(t, "model", m.Object)
	require.Equal(t, "swarm", m.OwnedBy)
	require.Positive(t, m.Created)
}

// TestCleanMessages: bad-request messages start with what went wrong, not
// with "openai: bad request".
func TestCleanMessages(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	for _, body := range []string{`{`, `{"prompt": ""}`, `{"model": "stories260K", "prompt": "", "temperature": 9}`} {
		resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		var e openai.ErrorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.NotContains(t, e.Error.Message, "bad request", body)
		require.NotContains(t, e.Error.Message, "\n", body)
	}
}
