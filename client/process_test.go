package client_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/swarm"
)

// These tests run real `swarm serve` processes (the binary built by
// testenv.SwarmBinary) on loopback and drive them with the client package.

// proc is a running `swarm serve` process.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *testenv.Buffer
	done   chan struct{} // closed once the process has exited and been waited for
	err    error         // cmd.Wait's result, after done
}

// firstLine captures the first line written to it.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	line chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.line == nil {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.line <- string(w.buf[:i])
		w.line = nil
	}
	return len(p), nil
}

// startServe starts `swarm serve --listen 127.0.0.1:0 args...` and waits for
// its ready line. Cleanup kills it if it still runs.
func startServe(t *testing.T, args ...string) *proc {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--measure-cache", t.TempDir(), "--log-level", "debug"}, args...)
	cmd := exec.Command(testenv.SwarmBinary(t), args...)
	ready := make(chan string, 1)
	p := &proc{cmd: cmd, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	cmd.Stdout = &firstLine{line: ready}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Signal(syscall.SIGCONT)
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("stderr of swarm %s:\n%s", strings.Join(args, " "), p.stderr.String())
		}
	})
	select {
	case line := <-ready:
		const prefix = "swarm serve: listening on "
		require.True(t, strings.HasPrefix(line, prefix), line)
		p.url = strings.TrimPrefix(line, prefix)
	case <-p.done:
		t.Fatalf("swarm serve exited before listening (%v): %s", p.err, p.stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("swarm serve did not listen within 2 minutes: %s", p.stderr.String())
	}
	return p
}

// exitCode waits for the process and returns its exit status.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	<-p.done
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

// running reports whether the process is still running.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// TestProcessFailoverSIGKILL is the acceptance test of failover: servers
// [0,3), [3,5) and a second [2,5) (with emulated latency, so that WS-RR
// first chooses [3,5)); the [3,5) process gets SIGKILL when the 50th token
// arrives; the client replaces it by the [2,5) server processing blocks
// 3..4, replays the 50 positions of its history there, and the greedy text
// equals llama2.c's reference.
func TestProcessFailoverSIGKILL(t *testing.T) {
	model := stories(t, "stories260K.bin")
	a := startServe(t, "--model", model, "--blocks", "0:3")
	b := startServe(t, "--model", model, "--blocks", "3:5")
	c := startServe(t, "--model", model, "--blocks", "2:5", "--emulate-latency", "10ms")
	cl, err := client.New(loadHead(t, model), []string{a.url, b.url, c.url})
	require.NoError(t, err)
	sess, err := cl.Open(context.Background(), 200)
	require.NoError(t, err)
	defer sess.Close()
	chain := sess.Chain()
	require.Len(t, chain, 2)
	require.Equal(t, b.url, chain[1].Server, "the chain goes through [3,5)")

	text := generate(t, sess, 200, func(tok client.Token) {
		if tok.Index == 49 {
			require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
			<-b.done
		}
	})
	require.Equal(t, referenceText(t), text)

	st := sess.Stats()
	require.Len(t, st.Replaced, 1)
	require.Equal(t, b.url, st.Replaced[0].Server)
	require.Equal(t, 50, st.Replaced[0].Steps)
	require.Equal(t, c.url, st.Hops[1].Server)
	require.Equal(t, swarm.Span{Start: 3, End: 5}, st.Hops[1].Span, "the [2,5) server processes only blocks 3..4")
	require.Equal(t, 50, st.Hops[1].Replayed)
	require.Equal(t, 150, st.Hops[1].Steps-1, "one replay step, then the 150 remaining tokens")
	require.Equal(t, -1, b.cmd.ProcessState.ExitCode(), "killed by a signal")
}

// TestProcessHungServer: a server process that stops (SIGSTOP: alive but
// silent) is replaced after the step timeout.
func TestProcessHungServer(t *testing.T) {
	model := stories(t, "stories260K.bin")
	a := startServe(t, "--model", model, "--blocks", "0:3")
	b := startServe(t, "--model", model, "--blocks", "3:5")
	c := startServe(t, "--model", model, "--blocks", "2:5", "--emulate-latency", "10ms")
	cl, err := client.New(loadHead(t, model), []string{a.url, b.url, c.url}, client.WithStepTimeout(500*time.Millisecond))
	require.NoError(t, err)
	sess, err := cl.Open(context.Background(), 200)
	require.NoError(t, err)
	defer sess.Close()
	require.Equal(t, b.url, sess.Chain()[1].Server)
	text := generate(t, sess, 200, func(tok client.Token) {
		if tok.Index == 30 {
			require.NoError(t, b.cmd.Process.Signal(syscall.SIGSTOP))
			// The signal is delivered asynchronously: on another core B
			// could still answer the next step, and then 32 steps would be
			// replayed instead of 31. Wait until B is stopped.
			waitStopped(t, b.cmd.Process.Pid)
		}
	})
	require.Equal(t, referenceText(t), text)
	st := sess.Stats()
	require.Len(t, st.Replaced, 1)
	require.Contains(t, st.Replaced[0].Failure, "step timed out")
	require.Equal(t, c.url, st.Hops[1].Server)
	require.Equal(t, 31, st.Hops[1].Replayed)
}

// waitStopped returns once process pid is in the stopped state ('T' in
// /proc/PID/stat). Where there is no /proc (macOS) it returns at once.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	if _, err := os.Stat(path); err != nil {
		return
	}
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		// The state is the field after the parenthesized command name.
		i := bytes.LastIndexByte(b, ')')
		return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
	}, 5*time.Second, time.Millisecond, "process %d did not stop", pid)
}

// TestProcessGracefulShutdown: SIGTERM with an open session. With a long
// drain timeout the session completes on the draining server, which exits
// 0 once the client closes; with --drain-timeout 0 the server tells the
// session to fail over, exits 0, and the client finishes on the other
// server. Both texts equal the reference.
func TestProcessGracefulShutdown(t *testing.T) {
	model := stories(t, "stories260K.bin")
	for _, tt := range []struct {
		drain    string
		failover bool
	}{{"1m", false}, {"0s", true}} {
		t.Run("drain "+tt.drain, func(t *testing.T) {
			a := startServe(t, "--model", model, "--blocks", "0:5", "--drain-timeout", tt.drain)
			b := startServe(t, "--model", model, "--blocks", "0:5", "--emulate-latency", "10ms")
			cl, err := client.New(loadHead(t, model), []string{a.url, b.url})
			require.NoError(t, err)
			sess, err := cl.Open(context.Background(), 200)
			require.NoError(t, err)
			require.Equal(t, a.url, sess.Chain()[0].Server)
			text := generate(t, sess, 200, func(tok client.Token) {
				if tok.Index != 19 {
					return
				}
				require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
				if tt.failover {
					require.Equal(t, 0, a.exitCode(t), "exit 0 after telling the session to fail over")
				}
			})
			require.Equal(t, referenceText(t), text)
			st := sess.Stats()
			if tt.failover {
				require.Len(t, st.Replaced, 1)
				require.Contains(t, st.Replaced[0].Failure, "ShuttingDown")
				require.Equal(t, b.url, st.Hops[0].Server)
				require.Equal(t, 20, st.Hops[0].Replayed)
			} else {
				require.Empty(t, st.Replaced)
				require.True(t, a.running(), "the server waits for the open session")
				require.NoError(t, sess.Close())
				require.Equal(t, 0, a.exitCode(t), "exit 0 once the session closed")
			}
			require.NoError(t, sess.Close())
			require.Contains(t, a.stderr.String(), "shutting down: not admitting new sessions")
		})
	}
}

// TestProcessAdmission: a server whose --memory fits one session of 100
// tokens makes a second session wait (the client sees the Waiting frame,
// /v1/info lists it in the queue) and serves it when the first closes; a
// session that can never fit gets a clear error.
func TestProcessAdmission(t *testing.T) {
	model := stories(t, "stories260K.bin")
	info := loadHead(t, model).Info()
	memory := 5*info.BlockBytes + 5*info.CacheBytes(100)
	a := startServe(t, "--model", model, "--blocks", "0:5", "--memory", itoa(memory))
	events := make(chan client.WaitEvent, 4)
	cl, err := client.New(loadHead(t, model), []string{a.url}, client.WithWaitHook(func(e client.WaitEvent) { events <- e }))
	require.NoError(t, err)
	first, err := cl.Open(context.Background(), 100)
	require.NoError(t, err)

	type opened struct {
		s   *client.Session
		err error
	}
	second := make(chan opened, 1)
	go func() {
		s, err := cl.Open(context.Background(), 100)
		second <- opened{s, err}
	}()
	e := <-events
	require.Equal(t, 0, e.Position)
	require.Equal(t, 1, e.QueueLen)
	cands := cl.Candidates(context.Background())
	require.Len(t, cands[0].Info.Admission.Queue, 1, "/v1/info shows the waiting session")
	require.Len(t, cands[0].Info.Admission.Open, 1)
	require.Zero(t, cands[0].Info.CacheBytesFree)

	require.Equal(t, referenceText(t)[:50], generate(t, first, 100, nil)[:50])
	select {
	case o := <-second:
		t.Fatalf("second session opened while the first holds the memory: %v", o.err)
	default:
	}
	require.NoError(t, first.Close())
	o := <-second
	require.NoError(t, o.err)
	require.Equal(t, referenceText(t)[:50], generate(t, o.s, 100, nil)[:50])
	require.NoError(t, o.s.Close())

	_, err = cl.Open(context.Background(), 200)
	require.ErrorIs(t, err, client.ErrNoChain)
	require.ErrorContains(t, err, "attention-cache capacity is below what the session needs")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
