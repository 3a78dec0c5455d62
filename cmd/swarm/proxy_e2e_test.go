package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/supervise"
	"github.com/swarmllm/swarm/internal/testenv"
)

// proc is a running child process that printed a ready line.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *testenv.Buffer
	done   chan struct{}
	err    error
}

// startProc runs cmd, waits for its first stdout line to start with
// prefix and returns the rest of that line as url. Cleanup kills it.
func startProc(t *testing.T, cmd *exec.Cmd, prefix string) *proc {
	t.Helper()
	p := &proc{cmd: cmd, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	ready := supervise.NewReadyWriter(1)
	cmd.Stdout, cmd.Stderr = ready, p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
	})
	select {
	case line := <-ready.Lines():
		require.True(t, strings.HasPrefix(line, prefix), "%s: ready line %q", cmd.Args[0], line)
		p.url = strings.TrimPrefix(line, prefix)
	case <-p.done:
		t.Fatalf("%v exited before its ready line (%v): %s", cmd.Args, p.err, p.stderr.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("%v printed no ready line within 3 minutes: %s", cmd.Args, p.stderr.String())
	}
	return p
}

// swarmCmd is an exec.Cmd of the swarm binary.
func swarmCmd(t *testing.T, args ...string) *exec.Cmd {
	return exec.Command(testenv.SwarmBinary(t), args...)
}

// stories260K returns the model flags of the llama2.c checkpoint.
func stories260K(t *testing.T) []string {
	dir := testenv.SharedFile(t, "models", "stories260K")
	return []string{"--model", dir + "/stories260K.bin", "--tokenizer", dir + "/tok512.bin"}
}

// startChainProcs runs `swarm serve` for 0:2, 2:4, 4:5 (extra flags added)
// and returns their URLs.
func startChainProcs(t *testing.T, extra ...string) []string {
	t.Helper()
	dir := testenv.SharedFile(t, "models", "stories260K")
	var urls []string
	for _, span := range []string{"0:2", "2:4", "4:5"} {
		urls = append(urls, startServeProc(t, append([]string{"--blocks", span, "--model", dir + "/stories260K.bin"}, extra...)...).url)
	}
	return urls
}

// startProxyProc runs `swarm proxy` over stories260K with the given flags.
func startProxyProc(t *testing.T, args ...string) *proc {
	t.Helper()
	args = append(append([]string{"proxy", "--listen", "127.0.0.1:0"}, stories260K(t)...), args...)
	p := startProc(t, swarmCmd(t, args...), launch.ProxyReadyPrefix)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, p.url)
	return p
}

// npmPackage returns clients/js with its node_modules installed (npm install
// there when missing), skipping the test when node or npm is absent.
func npmPackage(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (CI installs node and npm; see .ci/run)", tool)
		}
	}
	dir := filepath.Join(testenv.RepoRoot(t), "clients", "js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		cmd := exec.Command("npm", "install", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci in clients/js: %s", out)
	}
	return dir
}

// TestProxyOpenAINpm is issue 7's acceptance test: the official openai
// npm package streams a completion and a chat completion from a local
// swarm of three `swarm serve` processes through `swarm proxy`:
// temperature 0, max_tokens 200, an empty prompt (for the chat, one empty
// user message with the plain fallback template, which renders to the
// empty prompt) gives REFERENCE.md section 2's text.
func TestProxyOpenAINpm(t *testing.T) {
	dir := npmPackage(t)
	want := referenceText(t)
	proxy := startProxyProc(t, "--servers", strings.Join(startChainProcs(t), ","))
	cmd := exec.Command("node", "openai_stream.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWARM_PROXY_URL="+proxy.url, "MAX_TOKENS=200")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node openai_stream.mjs: %s", stderr.String())
	var got struct {
		Models     []string `json:"models"`
		Completion struct {
			Text         string         `json:"text"`
			Chunks       int            `json:"chunks"`
			FinishReason string         `json:"finish_reason"`
			Usage        map[string]int `json:"usage"`
			IDs          []string       `json:"ids"`
			Objects      []string       `json:"objects"`
		} `json:"completion"`
		Chat struct {
			Text         string         `json:"text"`
			Role         string         `json:"role"`
			FinishReason string         `json:"finish_reason"`
			Usage        map[string]int `json:"usage"`
			IDs          []string       `json:"ids"`
			Objects      []string       `json:"objects"`
		} `json:"chat"`
		Error     npmError `json:"error"`
		Retrieved struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"retrieved"`
		RetrieveError npmError `json:"retrieveError"`
		FormatError   npmError `json:"formatError"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, []string{"stories260K"}, got.Models)
	usage := map[string]int{"prompt_tokens": 1, "completion_tokens": 200, "total_tokens": 201}

	require.Equal(t, want, got.Completion.Text)
	require.Equal(t, "length", got.Completion.FinishReason)
	require.Equal(t, usage, got.Completion.Usage)
	require.Len(t, got.Completion.IDs, 1)
	require.Regexp(t, `^cmpl-`, got.Completion.IDs[0])
	require.Equal(t, []string{"text_completion"}, got.Completion.Objects)
	require.Equal(t, 201, got.Completion.Chunks, "one chunk per token and the final one")

	require.Equal(t, want, got.Chat.Text)
	require.Equal(t, "assistant", got.Chat.Role)
	require.Equal(t, "length", got.Chat.FinishReason)
	require.Equal(t, usage, got.Chat.Usage)
	require.Regexp(t, `^chatcmpl-`, got.Chat.IDs[0])
	require.Equal(t, []string{"chat.completion.chunk"}, got.Chat.Objects)

	require.Equal(t, 404, got.Error.Status)
	require.Equal(t, "model_not_found", got.Error.Code)
	require.Equal(t, "model", got.Error.Param)

	require.Equal(t, "stories260K", got.Retrieved.ID)
	require.Equal(t, "model", got.Retrieved.Object)
	require.Equal(t, npmError{Status: 404, Code: "model_not_found", Type: "invalid_request_error", Param: "model"}, got.RetrieveError)
	require.Equal(t, npmError{Status: 400, Code: "invalid_value", Type: "invalid_request_error", Param: "response_format.json_schema.schema"}, got.FormatError)
}

// npmError is the OpenAI error fields the npm client reports.
type npmError struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Type   string `json:"type"`
	Param  string `json:"param"`
}

// TestPythonClient runs the Python client's pytest suite
// (clients/python/tests) against a local swarm and `swarm proxy`: it
// streams REFERENCE.md section 2's text over the websocket API, token by
// token and with a stop sequence, continues a session and checks errors.
func TestPythonClient(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (CI installs python3-websockets and python3-pytest; see .ci/run)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3" // Debian's, where python3-websockets and python3-pytest install
	}
	if out, err := exec.Command(py, "-c", "import pytest, websockets").CombinedOutput(); err != nil {
		t.Skipf("%s lacks pytest or websockets (Debian: python3-pytest python3-websockets; see .ci/run): %s", py, out)
	}
	proxy := startProxyProc(t, "--servers", strings.Join(startChainProcs(t), ","))
	cmd := exec.Command(py, "-m", "pytest", "-v", "-p", "no:cacheprovider", filepath.Join(testenv.RepoRoot(t), "clients", "python"))
	cmd.Env = append(os.Environ(), "SWARM_PROXY_URL="+proxy.url,
		"SWARM_REFERENCE="+testenv.SharedFile(t, "models", "stories260K", "REFERENCE.md"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("pytest:\n%s", out)
	require.NoError(t, err)
	require.Regexp(t, `\b4 passed\b`, string(out))
	require.NotContains(t, string(out), "skipped")
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// completion posts a greedy completion request to the proxy and returns
// the status, the X-Swarm-Route header and the body.
func completion(t *testing.T, base string, body map[string]any, header map[string]string) (int, string, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, base+"/v1/completions", bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, resp.Header.Get("X-Swarm-Route"), out
}

// TestFullRangeReplica registers a REAL engine, llama.cpp (node-llama-cpp's
// prebuilt binary) behind our minimal OpenAI-compatible wrapper
// (clients/js/llama_engine.mjs), started by `swarm serve --full-range
// --process ...` as a child, next to three block servers that emulate a
// 20 ms WAN link. The proxy routes over one graph: the replica's one hop
// is cheaper than the chain, so it serves; with the replica's provider
// not allowed the chain serves; with no allowed provider left, 503. Both
// routes give REFERENCE.md section 2's text. Killing the engine ends the
// full-range server.
func TestFullRangeReplica(t *testing.T) {
	dir := npmPackage(t)
	want := referenceText(t)
	gguf := testenv.SharedFile(t, "models", "stories260K", "stories260K.gguf")
	port := freePort(t)
	backend := "http://127.0.0.1:" + strconv.Itoa(port)
	engine := "exec node " + filepath.Join(dir, "llama_engine.mjs") + " --model " + gguf + " --port " + strconv.Itoa(port)
	replica := startProc(t, swarmCmd(t, "serve", "--full-range", "--process", engine, "--backend-url", backend,
		"--model", gguf, "--provider", "bob", "--listen", "127.0.0.1:0", "--health-interval", "1s"), launch.ServeReadyPrefix)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, replica.url)

	var servers []string
	for _, u := range startChainProcs(t, "--emulate-latency", "20ms") {
		servers = append(servers, "alice="+u)
	}
	proxy := startProxyProc(t, "--servers", strings.Join(servers, ","), "--replicas", "bob="+replica.url, "--refresh", "100ms")
	body := map[string]any{"model": "stories260K", "prompt": "", "temperature": 0, "max_tokens": 200}

	status, route, out := completion(t, proxy.url, body, nil)
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, "replica: "+replica.url+" 0:5", route)
	require.Equal(t, want, out["choices"].([]any)[0].(map[string]any)["text"])

	status, route, out = completion(t, proxy.url, body, map[string]string{"X-Swarm-Providers": "alice"})
	require.Equal(t, 200, status, "%v", out)
	require.Regexp(t, `^chain: ws://127\.0\.0\.1:\d+/v1/inference 0:2 -> ws://127\.0\.0\.1:\d+/v1/inference 2:4 -> ws://127\.0\.0\.1:\d+/v1/inference 4:5$`, route)
	require.Equal(t, want, out["choices"].([]any)[0].(map[string]any)["text"])

	body["swarm_providers"] = []string{"carol"}
	status, _, out = completion(t, proxy.url, body, nil)
	require.Equal(t, http.StatusServiceUnavailable, status)
	e := out["error"].(map[string]any)
	require.Equal(t, "no_route", e["code"])
	require.Contains(t, e["message"], `provider "bob" is not in the allowlist ["carol"]`)
	require.Contains(t, e["message"], `provider "alice" is not in the allowlist ["carol"]`)

	resp, err := http.Get(proxy.url + "/api/v1/state")
	require.NoError(t, err)
	var st struct {
		Models []struct {
			Health   string `json:"health"`
			Replicas int    `json:"replicas"`
			Coverage []int  `json:"coverage"`
			Servers  []struct {
				Endpoint  string  `json:"endpoint"`
				Provider  string  `json:"provider"`
				FullRange bool    `json:"full_range"`
				State     string  `json:"state"`
				Tau       float64 `json:"tau"`
			} `json:"servers"`
		} `json:"models"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	m := st.Models[0]
	require.Equal(t, "ok", m.Health)
	require.Equal(t, 1, m.Replicas)
	require.Equal(t, []int{2, 2, 2, 2, 2}, m.Coverage)
	rep := m.Servers[len(m.Servers)-1]
	require.Equal(t, replica.url, rep.Endpoint)
	require.Equal(t, "bob", rep.Provider)
	require.True(t, rep.FullRange)
	require.Equal(t, "serving", rep.State)
	require.Positive(t, rep.Tau)

	// The engine dies: the full-range server notices and exits non-zero.
	out2, err := exec.Command("pkill", "-KILL", "-P", strconv.Itoa(replica.cmd.Process.Pid)).CombinedOutput()
	require.NoError(t, err, "%s", out2)
	select {
	case <-replica.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("swarm serve --full-range still runs after its engine died: %s", replica.stderr.String())
	}
	require.Error(t, replica.err)
	require.Contains(t, replica.stderr.String(), "the engine process exited")
}

// TestProxyFlagErrors checks that bad flags give a clear message and exit
// status 2.
func TestProxyFlagErrors(t *testing.T) {
	model := stories260K(t)
	keys := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(keys, []byte("short\n"), 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"--servers", "127.0.0.1:1"}, "--model is required"},
		{"no servers", model, "give the servers: --servers and/or --replicas"},
		{"bad replica", append([]string{"--replicas", "ws://x:1"}, model...), `replica "ws://x:1": want http://HOST:PORT`},
		{"bad server", append([]string{"--servers", "ftp://x:1"}, model...), `scheme "ftp"`},
		{"bad key file", append([]string{"--servers", "127.0.0.1:1", "--api-keys", keys}, model...), "key of 5 characters, want at least 8"},
		{"bad listen", append([]string{"--servers", "127.0.0.1:1", "--listen", "8000"}, model...), `--listen "8000"`},
		{"tokenizer without model", []string{"--servers", "127.0.0.1:1", "--tokenizer", "a", "--tokenizer", "b", "--model", "m"}, "2 --tokenizer flags for 1 --model flags"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runSwarmProcess(t, append([]string{"proxy"}, tt.args...)...)
			require.Equal(t, 2, code, "stdout %q stderr %q", out, errOut)
			require.Contains(t, errOut, tt.want)
			require.Empty(t, out)
		})
	}
}

// TestServeFullRangeFlagErrors checks the --full-range flag errors.
func TestServeFullRangeFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no backend", []string{"--n-blocks", "5"}, "--backend-url is required"},
		{"no blocks count", []string{"--backend-url", "http://127.0.0.1:1"}, "give --model PATH (only its metadata is read) or --n-blocks L"},
		{"bad backend", []string{"--backend-url", "127.0.0.1:1", "--n-blocks", "5"}, `--backend-url "127.0.0.1:1": want http://HOST:PORT`},
		{"with blocks", []string{"--backend-url", "http://127.0.0.1:1", "--n-blocks", "5", "--blocks", "0:2"}, "--blocks and --full-range exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runSwarmProcess(t, append([]string{"serve", "--full-range"}, tt.args...)...)
			require.Equal(t, 2, code, "stdout %q stderr %q", out, errOut)
			require.Contains(t, errOut, tt.want)
		})
	}
	// An engine that never gets healthy: exit 1 with the reason.
	out, errOut, code := runSwarmProcess(t, "serve", "--full-range", "--process", "exit 3", "--backend-url", "http://127.0.0.1:1", "--n-blocks", "5")
	require.Equal(t, 1, code, "stdout %q", out)
	require.Contains(t, errOut, "the engine process exited before it was healthy: exit status 3")
}
