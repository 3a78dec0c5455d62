//go:build !windows

// The demo's tests check that its server processes are gone with kill(pid,
// 0), which Windows does not have.

package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// demoCommand prepares `swarm demo args...` with SWARM_MODELS at the shared
// models and a private cache directory (so nothing is downloaded).
func demoCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testenv.SwarmBinary(t), append([]string{"demo"}, args...)...)
	cmd.Env = append(os.Environ(),
		"SWARM_MODELS="+filepath.Join(testenv.SharedDir(t), "models"),
		"XDG_CACHE_HOME="+t.TempDir(),
		"HF_ENDPOINT=http://127.0.0.1:1") // a download would fail loudly
	return cmd
}

// demoPIDs returns the server pids the demo printed on stderr.
func demoPIDs(t *testing.T, stderr string) []int {
	t.Helper()
	var pids []int
	for _, m := range regexp.MustCompile(`swarm demo: server blocks \d+:\d+ pid (\d+) ws://`).FindAllStringSubmatch(stderr, -1) {
		pid, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

// requireGone checks that no process has the pid (kill(pid, 0) fails with
// ESRCH): the demo waited for its children, so they are reaped.
func requireGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		err := syscall.Kill(pid, 0)
		require.Truef(t, errors.Is(err, syscall.ESRCH), "server pid %d is still there (kill 0: %v)", pid, err)
	}
}

// TestDemoEndToEnd runs `swarm demo` greedily from an empty prompt: it
// prints the beginning of llama2.c's reference story generated through its
// three servers, their stats, and leaves no server process behind.
func TestDemoEndToEnd(t *testing.T) {
	cmd := demoCommand(t, "--temperature", "0", "--prompt", "", "--max-tokens", "60", "--seed", "1")
	var out, errOut testenv.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), errOut.String())

	story := strings.TrimSuffix(out.String(), "\n")
	require.NotEmpty(t, story)
	require.True(t, strings.HasPrefix(referenceText(t), story), "greedy story %q is not a prefix of the reference", story)
	require.Greater(t, len(story), 150, "60 tokens of story")

	stderr := errOut.String()
	require.Contains(t, stderr, "from models-dir")
	require.Contains(t, stderr, "greedy decoding (temperature 0)")
	for i, span := range []string{"0:2", "2:4", "4:5"} {
		require.Contains(t, stderr, "swarm demo: server blocks "+span+" pid ")
		require.Contains(t, stderr, "hop "+strconv.Itoa(i+1)+"/3 ")
	}
	require.Contains(t, stderr, "generated 60; TTFT")
	pids := demoPIDs(t, stderr)
	require.Len(t, pids, 3)
	require.Contains(t, stderr, "swarm demo: stopped 3 servers (pids "+strconv.Itoa(pids[0])+" ")
	requireGone(t, pids)
}

// TestDemoSampled checks that a seeded sampled demo is reproducible and
// starts with the prompt.
func TestDemoSampled(t *testing.T) {
	run := func() string {
		out, err := demoCommand(t, "--seed", "42", "--max-tokens", "40").Output()
		require.NoError(t, err)
		return string(out)
	}
	a, b := run(), run()
	require.Equal(t, a, b)
	require.True(t, strings.HasPrefix(a, "Once upon a time"), a)
}

// TestDemoInterrupted sends SIGINT to the demo once its first server is
// up (as Ctrl-C would, to the demo alone: the servers run in their own
// process group); the demo stops every server it started and exits.
func TestDemoInterrupted(t *testing.T) {
	cmd := demoCommand(t, "--max-tokens", "500", "--prompt", "")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "swarm demo: server blocks 0:2 pid ") {
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			break
		}
	}
	rest, err := io.ReadAll(stderr)
	require.NoError(t, err)
	seen.Write(rest)
	err = cmd.Wait()
	log := seen.String()
	if err != nil {
		require.Contains(t, log, "interrupted", "a failed demo says it was interrupted")
	}
	pids := demoPIDs(t, log)
	require.NotEmpty(t, pids)
	require.Contains(t, log, "swarm demo: stopped ")
	requireGone(t, pids)
}

// TestDemoFlagErrors checks the usage errors of demo.
func TestDemoFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-tokens", "0"}, "--max-tokens 0"},
		{[]string{"--temperature", "-1"}, "temperature -1"},
		{[]string{"extra"}, "unknown command"},
	} {
		out, errOut, code := runSwarmProcess(t, append([]string{"demo"}, tt.args...)...)
		require.NotEqual(t, 0, code, out)
		require.Contains(t, errOut, tt.want)
	}
	out, _, code := runSwarmProcess(t, "demo", "--help")
	require.Equal(t, 0, code)
	for _, flag := range []string{"--prompt", "--max-tokens", "--temperature", "--top-p", "--seed", "--start-timeout"} {
		require.Contains(t, out, flag)
	}
}
