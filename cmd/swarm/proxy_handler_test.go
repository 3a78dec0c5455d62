package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/internal/launch"
)

// TestProxyEndpoints checks the read-only endpoints of the proxy handler
// over a gateway with API keys: /metrics (requests, tokens, TTFT/TPOT,
// errors by code, per-key usage), /api/v1/usage of the calling key,
// /api/v1/state and /health.
func TestProxyEndpoints(t *testing.T) {
	keys, err := ingress.ParseKeys(strings.NewReader("sk-alice-123456789 alice\nsk-bob-1234567890 bob\n"))
	require.NoError(t, err)
	gw := ingresstest.Gateway(t, ingresstest.StartChain(t), nil, func(c *ingress.Config) { c.Keys = keys })
	h, err := newProxyHandler(gw)
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	defer hs.Close()
	do := func(method, path, key, body string) (int, string) {
		req, err := http.NewRequest(method, hs.URL+path, bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for range 2 {
		code, body := do("POST", "/v1/completions", "sk-alice-123456789", `{"model": "stories260K", "prompt": "Lily", "max_tokens": 10, "temperature": 0}`)
		require.Equal(t, 200, code, body)
	}
	code, _ := do("POST", "/v1/completions", "sk-bob-1234567890", `{"model": "gpt-4", "prompt": ""}`)
	require.Equal(t, 404, code)
	code, _ = do("POST", "/v1/completions", "", `{"model": "stories260K", "prompt": ""}`)
	require.Equal(t, 401, code)

	code, body := do("GET", "/api/v1/usage", "sk-alice-123456789", "")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"key": "alice", "requests": 2, "prompt_tokens": 4, "completion_tokens": 20, "total_tokens": 24}`, body)
	code, _ = do("GET", "/api/v1/usage", "", "")
	require.Equal(t, 401, code)

	code, body = do("GET", "/metrics", "", "")
	require.Equal(t, 200, code)
	for _, line := range []string{
		`swarm_ingress_requests_total{api="completions",model="stories260K",outcome="ok",route="chain"} 2`,
		`swarm_ingress_tokens_total{kind="completion",model="stories260K"} 20`,
		`swarm_ingress_tokens_total{kind="prompt",model="stories260K"} 4`,
		`swarm_ingress_ttft_seconds_count{model="stories260K",route="chain"} 2`,
		`swarm_ingress_tpot_seconds_count{model="stories260K",route="chain"} 2`,
		`swarm_ingress_errors_total{api="openai",code="404"} 1`,
		`swarm_ingress_errors_total{api="openai",code="401"} 1`,
		`swarm_ingress_key_requests_total{key="alice"} 2`,
		`swarm_ingress_key_tokens_total{key="alice",kind="completion"} 20`,
	} {
		require.Contains(t, body, line)
	}

	code, body = do("GET", "/api/v1/state", "", "")
	require.Equal(t, 200, code)
	var st ingress.State
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Len(t, st.Models, 1)
	m := st.Models[0]
	require.Equal(t, "stories260K", m.Name)
	require.Equal(t, 5, m.Blocks)
	require.Equal(t, []int{1, 1, 1, 1, 1}, m.Coverage)
	require.Equal(t, "ok", m.Health)
	require.Len(t, m.Servers, 3)
	for _, s := range m.Servers {
		require.Equal(t, "serving", s.State)
		require.Positive(t, s.Tau)
		require.InDelta(t, 1/(s.Tau*float64(s.Span.Len())), s.Throughput, 1e-6)
	}

	code, body = do("GET", "/health", "", "")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"status": "ok"}`, body)
}

// TestProxyHelp checks that --help explains every flag of proxy and of
// serve --full-range.
func TestProxyHelp(t *testing.T) {
	out, _, code := runSwarmProcess(t, "proxy", "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"--model", "--tokenizer", "--listen", "--servers", "--replicas", "--bootstrap", "--api-keys",
		"--refresh", "--max-retries", "--step-timeout", "--alloc-timeout", "--failover-wait", "--wire-dtype", "--wait", "--log-level",
		"/v1/chat/completions", "/api/v2/generate", "/api/v1/state", "/metrics", "X-Swarm-Providers", launch.ProxyReadyPrefix} {
		require.Contains(t, out, s)
	}
	out, _, code = runSwarmProcess(t, "serve", "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"--full-range", "--backend-url", "--process", "--model-name", "--n-blocks", "--health-interval",
		"--start-timeout", "--measure-tokens"} {
		require.Contains(t, out, s)
	}
	out, _, code = runSwarmProcess(t, "proxy", "bench", "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"--concurrency", "--rounds", "--max-tokens", "--proxy", "--servers", "--json"} {
		require.Contains(t, out, s)
	}
}
