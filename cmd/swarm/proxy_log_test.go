package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProxyRequestLog runs `swarm proxy --log-format json` over three real
// block servers (also --log-format json) and posts one completion with a
// request id: the proxy's stderr has one JSON "request" line with the id,
// route, status, model, tokens (max_tokens 4, and a prompt that leaves
// room for them), TTFT and latency.
func TestProxyRequestLog(t *testing.T) {
	urls := startChainProcs(t, "--log-format", "json")
	proxy := startProxyProc(t, "--servers", strings.Join(urls, ","), "--log-format", "json")
	body := map[string]any{"model": "stories260K", "prompt": "Once upon a time", "temperature": 0, "max_tokens": 4}
	status, _, out := completion(t, proxy.url, body, map[string]string{"X-Request-Id": "e2e-req-1"})
	require.Equal(t, 200, status, "%v", out)
	usage := out["usage"].(map[string]any)

	var line map[string]any
	require.Eventually(t, func() bool { // the process's stderr reaches the buffer through a pipe
		for l := range strings.Lines(proxy.stderr.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" && m["id"] == "e2e-req-1" {
				line = m
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "no request line in %s", proxy.stderr.String())
	require.Equal(t, "POST", line["method"])
	require.Equal(t, "/v1/completions", line["route"])
	require.Equal(t, 200.0, line["status"])
	require.Equal(t, "stories260K", line["model"])
	require.Equal(t, usage["prompt_tokens"], line["prompt_tokens"])
	require.Equal(t, usage["completion_tokens"], line["completion_tokens"])
	require.Equal(t, 4.0, line["completion_tokens"], "max_tokens")
	require.Greater(t, line["ttft"].(float64), 0.0)
	require.GreaterOrEqual(t, line["latency"].(float64), line["ttft"].(float64))
	require.Equal(t, "INFO", line["level"])
}
