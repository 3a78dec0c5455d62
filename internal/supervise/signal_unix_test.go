//go:build unix

package supervise_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/supervise"
	"github.com/swarmllm/swarm/internal/testenv"
)

// TestChildSignal: children the parent signals on purpose (killed, or
// stopped and never resumed) are not failures at Stop, which still ends
// the stopped one; a child that dies of a signal nobody sent through
// Signal still is.
func TestChildSignal(t *testing.T) {
	var logs testenv.Buffer
	g := supervise.NewGroup("worker", &logs, "test: worker: ", 5*time.Second)
	ctx := context.Background()
	start := func(script string) *supervise.Child {
		c, err := g.Start(ctx, time.Minute, 1, "sh", "-c", script)
		require.NoError(t, err)
		return c
	}
	// exec: no grandchild that would hold stderr open past a SIGKILL.
	killed, other := start("echo up; exec sleep 60"), start("echo up; exec sleep 60")
	stopped := start("trap 'kill $!; exit 0' TERM; echo up; sleep 60 & wait")
	require.NoError(t, killed.Signal(syscall.SIGKILL))
	<-killed.Done()
	require.NoError(t, stopped.Signal(syscall.SIGSTOP))
	require.NoError(t, other.Cmd.Process.Signal(syscall.SIGKILL))
	<-other.Done()
	err := g.Stop()
	require.ErrorContains(t, err, strconv.Itoa(other.Cmd.Process.Pid)+": signal: killed")
	require.NotContains(t, err.Error(), strconv.Itoa(killed.Cmd.Process.Pid)+":")
	require.NotContains(t, logs.String(), "killed [", "the stopped child got SIGCONT with SIGTERM and exited in time")
	require.True(t, stopped.Cmd.ProcessState.Success(), "the stopped child ran its SIGTERM trap")
}
