package supervise_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"

	"github.com/swarmllm/swarm/internal/supervise"
)

// TestGroup starts real shell children: the ready lines come back, stderr
// is copied with the prefix, a child that exits early is not ready (with
// its stderr), and Stop ends them all — SIGTERM, then SIGKILL for one that
// ignores it — and says so.
func TestGroup(t *testing.T) {
	var logs testenv.Buffer
	g := supervise.NewGroup("worker", &logs, "test: worker: ", 300*time.Millisecond)
	ctx := context.Background()

	polite, err := g.Start(ctx, time.Minute, 2, "sh", "-c", "trap 'kill $!; exit 0' TERM; echo hello >&2; echo one; echo two; echo three; sleep 60 & wait")
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two"}, polite.Ready)
	stubborn, err := g.Start(ctx, time.Minute, 1, "sh", "-c", "trap '' TERM; echo up; while :; do sleep 1; done")
	require.NoError(t, err)
	require.Equal(t, []string{"up"}, stubborn.Ready)

	_, err = g.Start(ctx, time.Minute, 1, "sh", "-c", "echo cannot start >&2; exit 3")
	require.ErrorIs(t, err, supervise.ErrNotReady)
	require.ErrorContains(t, err, "exited before it was ready")
	require.ErrorContains(t, err, "cannot start")
	_, err = g.Start(ctx, 200*time.Millisecond, 1, "sh", "-c", "trap 'kill $!; exit 0' TERM; sleep 60 & wait")
	require.ErrorIs(t, err, supervise.ErrNotReady)
	require.ErrorContains(t, err, "was not ready within 200ms")

	err = g.Stop()
	require.ErrorContains(t, err, "exit status 3", "the child that failed is reported")
	require.NotContains(t, err.Error(), "signal", "children that exit on SIGTERM, or were killed, did not fail")
	out := logs.String()
	require.Contains(t, out, "test: worker: hello\n")
	require.Contains(t, out, "test: stopped 4 workers (pids "+strconv.Itoa(polite.Cmd.Process.Pid)+" ")
	require.Contains(t, out, ", killed ["+strconv.Itoa(stubborn.Cmd.Process.Pid), "the one that ignored SIGTERM")
	require.True(t, polite.Cmd.ProcessState.Success(), "the polite child exited 0 on SIGTERM")
	require.Equal(t, err, g.Stop(), "Stop is idempotent")
	require.False(t, strings.Contains(out, "three"), "stdout past the ready lines is not logged")
}

// TestReadyWriter hands on exactly the first n lines, across writes, and
// keeps the output.
func TestReadyWriter(t *testing.T) {
	w := supervise.NewReadyWriter(2)
	for _, p := range []string{"a", "b\nc", "d\ne\n", "f\n"} {
		_, err := w.Write([]byte(p))
		require.NoError(t, err)
	}
	require.Equal(t, "ab", <-w.Lines())
	require.Equal(t, "cd", <-w.Lines())
	require.Empty(t, w.Lines())
	require.Equal(t, "ab\ncd\ne\nf\n", w.Output())
}
