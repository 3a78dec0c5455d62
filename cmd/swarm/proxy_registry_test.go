package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/supervise"
	"github.com/swarmllm/swarm/internal/testenv"
)

// fastRegistry are registry timings for loopback tests.
var fastRegistry = []string{"--heartbeat-interval", "200ms", "--suspect-after", "2s", "--left-after", "5s",
	"--anti-entropy-interval", "500ms", "--max-clock-skew", "200ms"}

// registryLine reads the second stdout line of a swarm member
// ("swarm serve: registry {...}") from a process started by startProc.
func bootstrapAddr(t *testing.T, p *proc) string {
	t.Helper()
	w := p.cmd.Stdout.(*supervise.ReadyWriter)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		lines := strings.Split(w.Output(), "\n")
		for _, l := range lines {
			if js, ok := strings.CutPrefix(l, launch.ServeRegistryPrefix); ok {
				var v struct {
					Addrs []string `json:"addrs"`
				}
				require.NoError(t, json.Unmarshal([]byte(js), &v))
				require.NotEmpty(t, v.Addrs)
				return v.Addrs[0]
			}
		}
		select {
		case <-p.done:
			t.Fatalf("exited: %s", p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no registry line: %s", p.stderr.String())
	return ""
}

// TestProxyBootstrap runs the ingress on the registry: a full-range replica
// (llama.cpp through node-llama-cpp, our wrapper) is the swarm's first node
// and publishes itself; a block server hosting [0, 5) (20 ms emulated
// latency) and the proxy join through it. The proxy finds both in its
// registry replica, routes to the cheaper replica, to the chain when only
// the block server's provider is allowed, and both give REFERENCE.md
// section 2's text.
func TestProxyBootstrap(t *testing.T) {
	dir := npmPackage(t)
	want := referenceText(t)
	models := testenv.SharedFile(t, "models", "stories260K")
	port := freePort(t)
	engine := "exec node " + filepath.Join(dir, "llama_engine.mjs") + " --model " + models + "/stories260K.gguf --port " + strconv.Itoa(port)
	args := append([]string{"serve", "--full-range", "--process", engine, "--backend-url", "http://127.0.0.1:" + strconv.Itoa(port),
		"--model", models + "/stories260K.gguf", "--provider", "bob", "--listen", "127.0.0.1:0", "--p2p-listen", "/ip4/127.0.0.1/tcp/0"}, fastRegistry...)
	replica := startProc(t, swarmCmd(t, args...), launch.ServeReadyPrefix)
	boot := bootstrapAddr(t, replica)

	startServeProc(t, append([]string{"--model", models + "/stories260K.bin", "--blocks", "0:5", "--provider", "alice",
		"--emulate-latency", "20ms", "--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0"}, fastRegistry...)...)
	proxy := startProxyProc(t, append([]string{"--bootstrap", boot, "--refresh", "100ms"}, fastRegistry...)...)

	require.Eventually(t, func() bool {
		resp, err := http.Get(proxy.url + "/api/v1/state")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Models []struct {
				Replicas int   `json:"replicas"`
				Coverage []int `json:"coverage"`
			} `json:"models"`
		}
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.Models[0].Replicas == 1 && st.Models[0].Coverage[0] == 2
	}, time.Minute, 100*time.Millisecond, "the proxy's registry replica should list the replica and the block server")

	body := map[string]any{"model": "stories260K", "prompt": "", "temperature": 0, "max_tokens": 200}
	status, route, out := completion(t, proxy.url, body, nil)
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, "replica: "+replica.url+" 0:5", route)
	require.Equal(t, want, out["choices"].([]any)[0].(map[string]any)["text"])

	status, route, out = completion(t, proxy.url, body, map[string]string{"X-Swarm-Providers": "alice"})
	require.Equal(t, 200, status, "%v", out)
	require.Regexp(t, `^chain: \S+ 0:5$`, route)
	require.Equal(t, want, out["choices"].([]any)[0].(map[string]any)["text"])

	status, _, out = completion(t, proxy.url, body, map[string]string{"X-Swarm-Providers": "carol"})
	require.Equal(t, http.StatusServiceUnavailable, status, "%v", out)
}
