package openai_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// TestCORS: preflights are answered for allowed origins, and answers
// (streamed ones included) carry Access-Control-Allow-Origin.
func TestCORS(t *testing.T) {
	gw := ingresstest.Gateway(t, ingresstest.StartChain(t), nil, nil)
	api, err := openai.New(gw)
	require.NoError(t, err)
	h, err := openai.CORS([]string{"https://app.example", "http://localhost:5173/"}, api)
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	do := func(method, path, origin string, header map[string]string, body string) *http.Response {
		h := map[string]string{}
		for k, v := range header {
			h[k] = v
		}
		if origin != "" {
			h["Origin"] = origin
		}
		return send(t, method, hs.URL+path, strings.NewReader(body), h)
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"}
	tests := []struct {
		name, method, path, origin string
		header                     map[string]string
		status                     int
		allowOrigin, allowHeaders  string
	}{
		{"preflight allowed", "OPTIONS", "/v1/chat/completions", "https://app.example", preflight, 204, "https://app.example", "authorization, content-type, x-stainless-os"},
		{"preflight trailing slash in flag", "OPTIONS", "/v1/models", "http://localhost:5173", preflight, 204, "http://localhost:5173", "authorization, content-type, x-stainless-os"},
		{"preflight other origin", "OPTIONS", "/v1/chat/completions", "https://evil.example", preflight, 204, "", ""},
		{"simple allowed", "GET", "/v1/models", "https://app.example", nil, 200, "https://app.example", ""},
		{"simple other origin", "GET", "/v1/models", "https://evil.example", nil, 200, "", ""},
		{"no origin", "GET", "/v1/models", "", nil, 200, "", ""},
		{"OPTIONS without preflight headers", "OPTIONS", "/v1/models", "https://app.example", nil, 405, "https://app.example", ""},
		{"errors too", "GET", "/v1/nothing", "https://app.example", nil, 404, "https://app.example", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(tt.method, tt.path, tt.origin, tt.header, "")
			require.Equal(t, tt.status, resp.StatusCode)
			require.Equal(t, tt.allowOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
			require.Equal(t, tt.allowHeaders, resp.Header.Get("Access-Control-Allow-Headers"))
			if tt.status == 204 && tt.allowOrigin != "" {
				require.Equal(t, "GET, POST, OPTIONS", resp.Header.Get("Access-Control-Allow-Methods"))
			}
			if tt.origin != "" {
				require.Contains(t, resp.Header.Values("Vary"), "Origin")
			}
		})
	}

	t.Run("SSE", func(t *testing.T) {
		resp := do("POST", "/v1/completions", "https://app.example", map[string]string{"Content-Type": "application/json"},
			`{"model": "stories260K", "prompt": "", "max_tokens": 3, "stream": true}`)
		evs := events(t, resp)
		require.Equal(t, "[DONE]", evs[len(evs)-1])
		require.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, openai.RouteHeader, resp.Header.Get("Access-Control-Expose-Headers"))
	})

	t.Run("any origin", func(t *testing.T) {
		h, err := openai.CORS([]string{"*"}, api)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("OPTIONS", "/v1/models", nil)
		req.Header.Set("Origin", "https://anything.example")
		req.Header.Set("Access-Control-Request-Method", "GET")
		h.ServeHTTP(rec, req)
		require.Equal(t, 204, rec.Code)
		require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
	})

	for _, bad := range []string{"app.example", "https://app.example/path", "https://", "https://a.example?x=1"} {
		_, err := openai.CORS([]string{bad}, api)
		require.ErrorIs(t, err, openai.ErrBadOrigin, bad)
	}
	same, err := openai.CORS(nil, api)
	require.NoError(t, err)
	require.Same(t, http.Handler(api), same)
}
