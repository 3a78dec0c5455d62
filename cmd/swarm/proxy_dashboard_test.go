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
