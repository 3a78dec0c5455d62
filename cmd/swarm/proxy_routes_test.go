package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// TestProxyRoutes: paths of the proxy outside the API's routes answer 404,
// and known paths asked with another method 405 with Allow, both in
// OpenAI's error JSON.
func TestProxyRoutes(t *testing.T) {
	gw := ingresstest.Gateway(t, ingresstest.StartChain(t), nil, nil)
	h, err := newProxyHandler(gw)
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	defer hs.Close()
	for _, tt := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"POST", "/v2/completions", 404, ""},
		{"GET", "/api/v9/nothing", 404, ""},
		{"POST", "/api/v1/state", 405, "GET"},
		{"DELETE", "/health", 405, "GET"},
		{"POST", "/v1/models", 405, "GET"},
	} {
		req, err := http.NewRequest(tt.method, hs.URL+tt.path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var e openai.ErrorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e), "%s %s", tt.method, tt.path)
		resp.Body.Close()
		require.Equal(t, tt.status, resp.StatusCode, "%s %s", tt.method, tt.path)
		require.Equal(t, tt.allow, resp.Header.Get("Allow"), "%s %s", tt.method, tt.path)
		require.Equal(t, "invalid_request_error", e.Error.Type)
	}
}
