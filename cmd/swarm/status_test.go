package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/node"
)

// statusServer is one element of `swarm status --json`.
type statusServer = node.StatusServer

// fastRegistryFlags shorten the registry timing so that silence is noticed
// within seconds; every process of a test uses the same.
var fastRegistryFlags = []string{
	"--heartbeat-interval", "200ms", "--suspect-after", "1s", "--left-after", "3s",
	"--anti-entropy-interval", "500ms", "--max-clock-skew", "200ms",
}

// announcer is a running `swarm registry announce` process.
type announcer struct {
	cmd    *exec.Cmd
	id     string
	addrs  []string
	stderr *bytes.Buffer
	exited chan struct{} // closed when the process has exited; then waitErr is set
	// waitErr is cmd.Wait's result.
	waitErr error
}

func startAnnouncer(t *testing.T, args ...string) *announcer {
	t.Helper()
	args = append(append([]string{"registry", "announce"}, fastRegistryFlags...), args...)
	cmd := exec.Command(testenv.SwarmBinary(t), args...)
	a := &announcer{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = a.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		a.waitErr = cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-a.exited
	})
	select {
	case line := <-lines:
		var ready struct {
			ID    string   `json:"id"`
			Addrs []string `json:"addrs"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ready), "announce printed %q; stderr: %s", line, a.stderr)
		a.id, a.addrs = ready.ID, ready.Addrs
	case <-time.After(30 * time.Second):
		t.Fatalf("announce printed nothing in 30 s; stderr: %s", a.stderr)
	}
	return a
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// statusServers runs `swarm status --json` and decodes it, also checking the
// exact key set of every server object.
func statusServers(t require.TestingT, bin, bootstrap string) []statusServer {
	cmd := exec.Command(bin, append([]string{"status", "--json", "--wait", "10s", "--bootstrap", bootstrap}, fastRegistryFlags...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	var raw struct {
		Servers []map[string]any `json:"servers"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &raw), stdout.String())
	wantKeys := []string{"cache_free_bytes", "end", "heartbeat_age_s", "id", "model", "provider", "sessions", "start", "state", "tau"}
	for _, s := range raw.Servers {
		var keys []string
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		require.Equal(t, wantKeys, keys)
	}
	var out struct {
		Servers []statusServer `json:"servers"`
	}
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&out))
	for i, s := range out.Servers { // one machine, one clock: a stamp is never from the future
		require.GreaterOrEqual(t, s.HeartbeatAgeS, -0.05, s.ID)
		out.Servers[i].HeartbeatAgeS = 0 // compared below as a whole; the age is checked here
	}
	return out.Servers
}

func byID(servers []statusServer) map[string]statusServer {
	m := map[string]statusServer{}
	for _, s := range servers {
		m[s.ID] = s
	}
	return m
}

// TestStatus_EndToEnd runs three real announcer processes and `swarm
// status`: the bootstrap address is formed by a script from `swarm
// identity` and a chosen port; then one announcer is SIGKILLed (SUSPECTED,
// then LEFT) and one stopped with SIGTERM (announced LEFT).
func TestStatus_EndToEnd(t *testing.T) {
	bin := testenv.SwarmBinary(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "boot.key")
	out, errOut, code := runP2PCmd(t, "identity", "--identity", keyFile)
	require.Zero(t, code, errOut)
	bootID := strings.TrimSpace(out)
	port := freeLoopbackPort(t)
	bootAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", port, bootID)

	a := startAnnouncer(t, "--identity", keyFile, "--p2p-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port),
		"--model", "stories260K", "--blocks", "0:3", "--model-blocks", "5", "--tau", "0.002",
		"--provider", "alice", "--cache-free-bytes", "1000")
	require.Equal(t, bootID, a.id)
	require.Contains(t, a.addrs, bootAddr)
	b := startAnnouncer(t, "--bootstrap", bootAddr, "--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--model", "stories260K", "--blocks", "2:5", "--model-blocks", "5", "--sessions", "2", "--provider", "bob")
	c := startAnnouncer(t, "--bootstrap", bootAddr, "--p2p-listen", "/ip4/127.0.0.1/udp/0/quic-v1",
		"--model", "stories260K", "--blocks", "3:5", "--model-blocks", "5", "--state", "JOIN", "--provider", "carol")

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		servers := byID(statusServers(ct, bin, bootAddr))
		require.Len(ct, servers, 3)
		require.Equal(ct, statusServer{ID: a.id, Provider: "alice", Model: "stories260K", Start: 0, End: 3,
			State: "SERVING", Tau: 0.002, Sessions: 0, CacheFreeBytes: 1000}, servers[a.id])
		require.Equal(ct, statusServer{ID: b.id, Provider: "bob", Model: "stories260K", Start: 2, End: 5,
			State: "SERVING", Sessions: 2}, servers[b.id])
		require.Equal(ct, statusServer{ID: c.id, Provider: "carol", Model: "stories260K", Start: 3, End: 5,
			State: "JOIN"}, servers[c.id])
	}, 60*time.Second, 200*time.Millisecond)

	table, errOut, code := runP2PCmd(t, append([]string{"status", "--bootstrap", bootAddr}, fastRegistryFlags...)...)
	require.Zero(t, code, errOut)
	require.Contains(t, table, "NODE")
	require.Contains(t, table, "CACHE FREE")
	require.Contains(t, table, "HEARTBEAT AGE")
	require.Contains(t, table, "stories260K  blocks 0..4: 1 1 2 1 1\n", "JOIN servers do not count")

	// SIGKILL b: no LEFT is announced; it must leave routing (SUSPECTED),
	// then be LEFT by silence.
	require.NoError(t, b.cmd.Process.Kill())
	var firstNotServing string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		s := byID(statusServers(ct, bin, bootAddr))[b.id]
		if firstNotServing == "" && s.State != "SERVING" {
			firstNotServing = s.State
		}
		require.Equal(ct, "LEFT", s.State)
	}, 60*time.Second, 200*time.Millisecond)
	require.Contains(t, []string{"SUSPECTED", "LEFT"}, firstNotServing)

	// SIGTERM c: it announces LEFT and exits cleanly.
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-c.exited:
		require.NoError(t, c.waitErr, "stderr: %s", c.stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("announce did not exit on SIGTERM")
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.Equal(ct, "LEFT", byID(statusServers(ct, bin, bootAddr))[c.id].State)
	}, 30*time.Second, 200*time.Millisecond)
}

func TestStatus_Errors(t *testing.T) {
	_, errOut, code := runP2PCmd(t, "status")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--bootstrap")

	_, errOut, code = runP2PCmd(t, "status", "--bootstrap", "/ip4/127.0.0.1/tcp/1")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "/p2p/PEERID")

	// Nobody listens there: a clear error after --wait.
	keyOut, _, _ := runP2PCmd(t, "identity", "--identity", filepath.Join(t.TempDir(), "k"))
	addr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", freeLoopbackPort(t), strings.TrimSpace(keyOut))
	start := time.Now()
	_, errOut, code = runP2PCmd(t, "status", "--bootstrap", addr, "--wait", "1s")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no bootstrap peer answered")
	require.Less(t, time.Since(start), 20*time.Second)

	_, errOut, code = runP2PCmd(t, "registry", "announce", "--model", "m", "--blocks", "3:1")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--blocks")
}
