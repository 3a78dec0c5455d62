package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// TestServeAnnounce is issue 18's joining test with real processes: a
// server listening on 0.0.0.0 with --announce ws://HOST:P (given through
// $SWARM_ANNOUNCE) and --announce-p2p, its public name and memory (a
// human size) from a --config file, prints and advertises HOST, not
// 0.0.0.0: `swarm status --json` shows its endpoints, public name and
// reachability verdict (direct on loopback).
func TestServeAnnounce(t *testing.T) {
	keyFile, listen, boot := bootstrapIdentity(t)
	port := freeLoopbackPort(t)
	announce := fmt.Sprintf("ws://swarm-announce.test:%d/v1/inference", port)
	conf := filepath.Join(t.TempDir(), "swarm.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("public-name: alice-4090\nmemory: 4MiB\nblocks: \"0:5\"\n"), 0o600))
	args := append(append([]string{"--config", conf, "--listen", fmt.Sprintf("0.0.0.0:%d", port), "--identity", keyFile,
		"--p2p-listen", listen, "--announce-p2p", listen + ",/ip4/198.51.100.7/tcp/4001", "--measure-cache", t.TempDir()},
		storiesFlags(t)...), fastRegistryFlags...)
	cmd := exec.Command(testenv.SwarmBinary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "SWARM_ANNOUNCE=ws://swarm-announce.test:"+fmt.Sprint(port))
	p, ready := startSwarmServerCmd(t, cmd)
	waitReady(t, p, ready)
	require.Equal(t, announce, p.url)
	id := p.id
	require.Equal(t, []string{boot, "/ip4/198.51.100.7/tcp/4001/p2p/" + id}, p.addrs)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		s, ok := storiesServers(ct, testenv.SwarmBinary(t), boot, fastRegistryFlags)[id]
		require.True(ct, ok)
		require.Equal(ct, "SERVING", s.State)
		require.Equal(ct, "alice-4090", s.PublicName)
		require.Equal(ct, "direct", s.Reachability)
		require.Equal(ct, []string{announce, boot, "/ip4/198.51.100.7/tcp/4001/p2p/" + id}, s.Endpoints)
		require.False(ct, slices.ContainsFunc(s.Endpoints, func(e string) bool { return e == fmt.Sprintf("ws://0.0.0.0:%d/v1/inference", port) }))
	}, 60*time.Second, 200*time.Millisecond)
	require.Contains(t, p.stderr.String(), "reachability=direct")
	// The kernel choice is logged at start.
	require.Regexp(t, `msg=engine backend=cpu kernels=(go|avx2\+q32i8\+f16x8|avx2\+avx512|avx2\+avx512\+vnni) weights=\S+ cache_dtype=f32`, p.stderr.String())
}

// TestServeAnnounceErrors: --announce values that clients could not dial,
// and an environment variable that does not parse, are usage errors.
func TestServeAnnounceErrors(t *testing.T) {
	model := storiesFlags(t)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{args: []string{"--blocks", "0:5", "--announce", "ws://0.0.0.0:7001"}, want: "not an address clients can dial"},
		{args: []string{"--blocks", "0:5", "--announce", "http://node:7001"}, want: "want ws://HOST:PORT"},
		{args: []string{"--blocks", "0:5", "--listen", "none", "--announce", "ws://node:7001"}, want: "--announce with --listen none"},
		{args: []string{"--blocks", "0:5"}, env: "SWARM_MEMORY=lots", want: "$SWARM_MEMORY"},
	} {
		cmd := exec.Command(testenv.SwarmBinary(t), append(append([]string{"serve"}, tc.args...), model...)...)
		if tc.env != "" {
			cmd.Env = append(os.Environ(), tc.env)
		}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, string(out))
		require.Equal(t, 2, exit.ExitCode(), string(out))
		require.Contains(t, string(out), tc.want)
	}
}
