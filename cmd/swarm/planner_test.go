package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// TestPlannerCommitsAMove runs a real `swarm planner` (a group of one)
// beside two announced servers of a 4-block model, each with memory for
// exactly 2 blocks (s_m 100 bytes, s_c 1 byte x 10 tokens, R = 1) and both
// on 0:2: block 2:4 is uncovered, so the planner commits epoch 1 moving the
// second server (by id) to 2:4; `swarm status --planners` prints it.
func TestPlannerCommitsAMove(t *testing.T) {
	bin := testenv.SwarmBinary(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "planner.key")
	out, errOut, code := runP2PCmd(t, "identity", "--identity", keyFile)
	require.Zero(t, code, errOut)
	plannerID := strings.TrimSpace(out)

	server := []string{"--model", "m", "--blocks", "0:2", "--model-blocks", "4", "--memory", "220", "--cache-capacity-bytes", "20",
		"--cache-bytes-per-token", "1", "--tau", "0.01"}
	a := startAnnouncer(t, append([]string{"--p2p-listen", "/ip4/127.0.0.1/tcp/0"}, server...)...)
	boot := a.addrs[0]
	b := startAnnouncer(t, append([]string{"--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0"}, server...)...)

	cmd := exec.Command(bin, append([]string{"planner", "--identity", keyFile, "--members", plannerID, "--bootstrap", boot,
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0", "--target-sessions", "1", "--max-length", "10", "--interval", "200ms"}, fastRegistryFlags...)...)
	logFile, err := os.Create(filepath.Join(dir, "planner.log"))
	require.NoError(t, err)
	defer logFile.Close()
	cmd.Stderr = logFile // a file, not a pipe: Wait never waits on a reader
	require.NoError(t, cmd.Start())
	exited := make(chan struct{}) // closed once Wait returned waitErr
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	move := max(a.id, b.id) // the first server by id keeps 0:2
	want := fmt.Sprintf("  step 0  %s  0:2 -> 2:4  (waiting)\n", move)
	plannerLog := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append([]string{"status", "--bootstrap", boot, "--planners", plannerID}, fastRegistryFlags...)...).CombinedOutput()
		require.NoError(ct, err, "%s", out)
		require.Contains(ct, string(out), "plan: epoch 1 active, 1 moves\n"+want)
	}, 60*time.Second, 500*time.Millisecond, "planner log: %s", plannerLog())

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case <-exited:
		require.NoError(t, waitErr, "planner log: %s", plannerLog())
	case <-time.After(30 * time.Second):
		t.Fatal("planner did not exit on SIGINT")
	}
}
