package main

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// waitExit waits up to timeoutMs for a process that is not our child to
// exit, through a pidfd (pidfd_open + poll): no sleeping, no polling loop.
func waitExit(t *testing.T, pid, timeoutMs int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // already gone
	}
	require.NoError(t, err)
	defer unix.Close(fd)
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, timeoutMs)
	require.NoError(t, err)
	require.Equalf(t, 1, n, "server pid %d still runs %d ms after the demo died", pid, timeoutMs)
}

// TestDemoKilled kills the demo with SIGKILL (it cannot clean up) once its
// servers are up: the kernel's parent-death signal kills them.
func TestDemoKilled(t *testing.T) {
	cmd := demoCommand(t, "--max-tokens", "500", "--prompt", "")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "swarm demo: server blocks 4:5 pid ") {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	io.Copy(io.Discard, stderr)
	cmd.Wait()
	pids := demoPIDs(t, seen.String())
	require.Len(t, pids, 3, seen.String())
	for _, pid := range pids {
		start := time.Now()
		waitExit(t, pid, 10000)
		t.Logf("pid %d gone after %v", pid, time.Since(start))
	}
}
