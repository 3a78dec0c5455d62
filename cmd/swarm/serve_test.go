package main

import (
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/supervise"
	"github.com/swarmllm/swarm/internal/testenv"
)

// serveProc is a running `swarm serve` process.
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *testenv.Buffer
	done   chan struct{}
	err    error
}

// startServeProc runs `swarm serve --listen 127.0.0.1:0 args...` and waits
// for the ready line on stdout. Cleanup kills it if it still runs.
func startServeProc(t *testing.T, args ...string) *serveProc {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--measure-cache", t.TempDir()}, args...)
	cmd := exec.Command(testenv.SwarmBinary(t), args...)
	p := &serveProc{cmd: cmd, stderr: &testenv.Buffer{}, done: make(chan struct{})}
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
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case line := <-ready.Lines():
		require.True(t, strings.HasPrefix(line, launch.ServeReadyPrefix), line)
		p.url = strings.TrimPrefix(line, launch.ServeReadyPrefix)
		require.Regexp(t, `^ws://127\.0\.0\.1:\d+/v1/inference$`, p.url)
	case <-p.done:
		t.Fatalf("swarm serve exited before listening (%v): %s", p.err, p.stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("swarm serve did not listen within 2 minutes: %s", p.stderr.String())
	}
	return p
}

// TestServeGenerateStories260K is the acceptance test of issue 3: three
// `swarm serve` processes on loopback host [0,2), [2,4), [4,5) of
// stories260K, and `swarm generate --servers ... --temperature 0
// --max-tokens 200` from an empty prompt prints exactly REFERENCE.md
// section 2's text (plus run.c's newline), with the llama2.c checkpoint and
// with the GGUF copy; with f16 hidden states on the wire too.
func TestServeGenerateStories260K(t *testing.T) {
	want := referenceText(t) + "\n"
	dir := testenv.SharedFile(t, "models", "stories260K")
	tests := []struct {
		name  string
		model []string // flags naming the model, for serve and generate
		extra []string // more generate flags
	}{
		{"llama2c", []string{"--model", dir + "/stories260K.bin", "--tokenizer", dir + "/tok512.bin"}, nil},
		{"gguf", []string{"--model", dir + "/stories260K.gguf"}, nil},
		{"llama2c f16 wire", []string{"--model", dir + "/stories260K.bin", "--tokenizer", dir + "/tok512.bin"}, []string{"--wire-dtype", "f16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var urls []string
			for _, span := range []string{"0:2", "2:4", "4:5"} {
				urls = append(urls, startServeProc(t, append([]string{"--blocks", span}, tt.model...)...).url)
			}
			// Addresses may be given without the scheme and path.
			urls[1] = strings.TrimSuffix(strings.TrimPrefix(urls[1], "ws://"), "/v1/inference")
			args := append([]string{"generate", "--servers", strings.Join(urls, ","), "--temperature", "0", "--max-tokens", "200", "--stats"}, tt.model...)
			out, errOut, code := runSwarmProcess(t, append(args, tt.extra...)...)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, want, out)
			for i, span := range []string{"0:2", "2:4", "4:5"} {
				require.Regexp(t, `hop `+string(rune('1'+i))+`/3 ws://127\.0\.0\.1:\d+/v1/inference blocks `+span+`: 200 steps, RTT t_cj median \d+\.\d+ms over 200 tokens`, errOut)
			}
			require.Contains(t, errOut, "generated 200; TTFT")
		})
	}
}

// TestServeExitsZeroOnSIGTERM checks the graceful exit of an idle server.
func TestServeExitsZeroOnSIGTERM(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	p := startServeProc(t, "--model", dir+"/stories260K.bin", "--blocks", "0:5")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	<-p.done
	require.NoError(t, p.err, p.stderr.String())
	require.Contains(t, p.stderr.String(), "shutting down: not admitting new sessions")
}

// TestServeFlagErrors checks that bad flags give a clear message, exit
// status 2 for usage errors and 1 for failures.
func TestServeFlagErrors(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	model := dir + "/stories260K.bin"
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no blocks", []string{"--model", model}, 2, "--blocks START:END is required"},
		{"no model", []string{"--blocks", "0:2"}, 2, "--model is required"},
		{"bad span", []string{"--model", model, "--blocks", "2"}, 2, `"2": want START:END`},
		{"empty span", []string{"--model", model, "--blocks", "2:2"}, 2, "2:2 is empty"},
		{"span past the model", []string{"--model", model, "--blocks", "3:9", "--measure-cache", t.TempDir()}, 2, "3:9 ends past the model's 5 blocks"},
		{"memory below the weights", []string{"--model", model, "--blocks", "0:2", "--memory", "1000"}, 2, "need 363520 bytes (s_m*m) but memory is 1000"},
		{"negative memory", []string{"--model", model, "--blocks", "0:2", "--memory", "-5"}, 2, `invalid argument "-5" for "--memory" flag: size "-5" is negative`},
		{"bad duration", []string{"--model", model, "--blocks", "0:2", "--drain-timeout", "soon"}, 2, "drain-timeout"},
		{"bad log level", []string{"--model", model, "--blocks", "0:2", "--log-level", "loud"}, 2, `--log-level "loud"`},
		{"bad listen", []string{"--model", model, "--blocks", "0:2", "--listen", "7000"}, 2, `--listen "7000"`},
		{"port in use", []string{"--model", model, "--blocks", "0:2", "--listen", busy.Addr().String()}, 1, "address already in use"},
		{"missing model file", []string{"--model", dir + "/nope.bin", "--blocks", "0:2"}, 1, "nope.bin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runSwarmProcess(t, append([]string{"serve"}, tt.args...)...)
			require.Equal(t, tt.code, code, "stdout %q stderr %q", out, errOut)
			require.Contains(t, errOut, tt.want)
			require.Empty(t, out, "no ready line")
		})
	}
}

// TestServeHelp checks that --help explains every flag.
func TestServeHelp(t *testing.T) {
	out, _, code := runSwarmProcess(t, "serve", "--help")
	require.Equal(t, 0, code)
	for _, flag := range []string{"--model", "--tokenizer", "--blocks", "--listen", "--memory", "--max-sessions", "--session-idle-timeout", "--max-sessions-per-conn", "--max-sessions-per-peer",
		"--emulate-latency", "--drain-timeout", "--remeasure", "--measure-cache", "--log-level"} {
		require.Contains(t, out, flag)
	}
	require.Contains(t, out, "swarm serve: listening on ws://HOST:PORT/v1/inference")
}

// TestGenerateServersErrors checks the errors of generate --servers.
func TestGenerateServersErrors(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	model := []string{"--model", dir + "/stories260K.bin", "--tokenizer", dir + "/tok512.bin"}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := closed.Addr().String()
	closed.Close()
	half := startServeProc(t, append([]string{"--blocks", "0:3"}, model...)...)
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unreachable", []string{"--servers", down}, 1, []string{"no chain of servers covers blocks 0:5", "no usable server hosts blocks 0:5", "connection refused"}},
		{"uncovered blocks", []string{"--servers", half.url}, 1, []string{"no usable server hosts blocks 3:5"}},
		{"bad address", []string{"--servers", "ftp://x:1"}, 2, []string{`scheme "ftp"`}},
		{"bad wire dtype", []string{"--servers", half.url, "--wire-dtype", "q8_0"}, 2, []string{"wire dtype q8_0"}},
		{"bad step timeout", []string{"--servers", half.url, "--step-timeout", "0s"}, 2, []string{"step timeout 0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"generate", "--temperature", "0", "--max-tokens", "10"}, model...), tt.args...)
			out, errOut, code := runSwarmProcess(t, args...)
			require.Equal(t, tt.code, code, "stdout %q stderr %q", out, errOut)
			for _, w := range tt.want {
				require.Contains(t, errOut, w)
			}
		})
	}
}

// TestServeGenerateMatchesLocal checks that a prompt (prefilled in one
// multi-token step through the chain) and seeded sampling give the same
// text through servers as in one process: the chain computes bit-identical
// logits.
func TestServeGenerateMatchesLocal(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	model := []string{"--model", dir + "/stories260K.gguf"}
	var urls []string
	for _, span := range []string{"0:3", "3:5"} {
		urls = append(urls, startServeProc(t, append([]string{"--blocks", span}, model...)...).url)
	}
	args := append([]string{"generate", "--prompt", "Lily and Ben went to the park. They saw", "--temperature", "0.8",
		"--top-p", "0.9", "--seed", "5", "--max-tokens", "120"}, model...)
	local, errOut, code := runSwarmProcess(t, append(args, "--local")...)
	require.Equal(t, 0, code, errOut)
	remote, errOut, code := runSwarmProcess(t, append(args, "--servers", strings.Join(urls, ","))...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, local, remote)
	require.True(t, strings.HasPrefix(remote, "Lily and Ben went to the park. They saw"), remote)
	require.Greater(t, len(remote), 200)
}

// TestServeGenerateJSON: `swarm generate --servers --json` gives the same
// object as --local, the greedy ids of REFERENCE.md section 3.
func TestServeGenerateJSON(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	model := []string{"--model", dir + "/stories260K.gguf"}
	var urls []string
	for _, span := range []string{"0:3", "3:5"} {
		urls = append(urls, startServeProc(t, append([]string{"--blocks", span}, model...)...).url)
	}
	args := append([]string{"generate", "--prompt", "Once upon a time", "--temperature", "0", "--max-tokens", "40"}, model...)
	remote := generateJSONOutput(t, append(args, "--servers", strings.Join(urls, ","))...)
	require.Equal(t, []int{1, 403, 407, 261, 378}, remote.PromptIDs)
	require.Equal(t, referenceIDs(t)[4:44], remote.IDs)
	require.Equal(t, generateJSONOutput(t, append(args, "--local")...), remote)
}
