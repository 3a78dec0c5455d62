package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/swarm"
)

// TestProxyDashboard serves the proxy handler over three block servers
// (0:2, 2:4, 4:5), answers two completions of 10 tokens, and reads its
// dashboard: GET /api/v1/state names the node (role proxy, version) and
// counts the 2 requests, their 20 completion tokens, their latencies and
// TTFTs; in headless chromium the page shows the ingress panel and 3
// server rows (screenshot dashboard-proxy.png in testenv.ArtifactDir).
func TestProxyDashboard(t *testing.T) {
	gw := ingresstest.Gateway(t, ingresstest.StartChain(t), nil, nil)
	h, err := newProxyHandler(gw)
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	defer hs.Close()
	for range 2 {
		resp, err := http.Post(hs.URL+"/v1/completions", "application/json",
			bytes.NewReader([]byte(`{"model": "stories260K", "prompt": "Lily", "max_tokens": 10, "temperature": 0}`)))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, "%s", b)
	}

	resp, err := http.Get(hs.URL + "/api/v1/state")
	require.NoError(t, err)
	var st ingress.State
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.NotNil(t, st.Node)
	require.Equal(t, "proxy", st.Node.Role)
	require.Equal(t, swarm.Version, st.Node.Version)
	require.NotNil(t, st.Ingress)
	require.Equal(t, int64(2), st.Ingress.Requests)
	require.Equal(t, int64(0), st.Ingress.Errors)
	require.Equal(t, int64(20), st.Ingress.CompletionTokens)
	require.Equal(t, int64(2), st.Ingress.LatencyCount)
	require.Equal(t, int64(2), st.Ingress.TTFTCount)
	require.Greater(t, st.Ingress.LatencySeconds, st.Ingress.TTFTSeconds, "a request lasts past its first token")
	require.Len(t, st.Models, 1)
	require.Equal(t, []int{1, 1, 1, 1, 1}, st.Models[0].Coverage)
	require.Len(t, st.Models[0].Headroom, 5)

	bin := testenv.Chromium(t)
	dom := testenv.HeadlessChromium(t, bin, hs.URL+"/", "--dump-dom")
	require.Equal(t, 3, strings.Count(dom, `class="server-row"`), "server rows")
	require.Equal(t, 5, strings.Count(dom, `class="cov-cell"`), "coverage cells")
	require.Contains(t, dom, `<section id="ingress">`, "the ingress panel is shown (not hidden)")
	require.Contains(t, dom, `<div class="k">requests</div>`)
	shot := filepath.Join(testenv.ArtifactDir(t), "dashboard-proxy.png")
	testenv.HeadlessChromium(t, bin, hs.URL+"/", "--screenshot="+shot)
	t.Logf("screenshot: %s", shot)
}

// TestServeStandaloneDashboard runs `swarm serve --blocks 1:4` outside the
// swarm and reads its pages: the dashboard's HTML at /, /api/v1/state with
// the one server (coverage 0,1,1,1,0 of 5 blocks: the model is
// unavailable alone), /metrics with the server's and the Go collectors,
// and 404 elsewhere.
func TestServeStandaloneDashboard(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	p := startServeProc(t, "--blocks", "1:4", "--model", dir+"/stories260K.bin")
	base := strings.TrimSuffix(strings.Replace(p.url, "ws://", "http://", 1), "/v1/inference")
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/")
	require.Equal(t, 200, code)
	require.Contains(t, body, `<script src="/dashboard/app.js"></script>`)
	code, body = get("/api/v1/state")
	require.Equal(t, 200, code)
	var st ingress.State
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, "server", st.Node.Role)
	require.Len(t, st.Models, 1)
	require.Equal(t, []int{0, 1, 1, 1, 0}, st.Models[0].Coverage)
	require.Equal(t, "unavailable", st.Models[0].Health)
	require.Equal(t, []string{"0:1", "4:5"}, st.Models[0].Uncovered)
	require.Len(t, st.Models[0].Servers, 1)
	require.Equal(t, p.url, st.Models[0].Servers[0].ID, "no peer id outside the swarm: the URL")
	code, body = get("/metrics")
	require.Equal(t, 200, code)
	for _, name := range []string{"swarm_server_sessions 0", "swarm_server_tokens_total 0", "go_goroutines"} {
		require.Contains(t, body, name)
	}
	code, _ = get("/nothing")
	require.Equal(t, 404, code)
}
