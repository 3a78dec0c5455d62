package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersion_Stamped builds the binary as `make build` stamps it (-X
// github.com/swarmllm/swarm/swarm.Version=...) and checks that `swarm
// --version` prints the stamp; the unstamped test binary says "dev".
func TestVersion_Stamped(t *testing.T) {
	stdout, _, code := runSwarm(t, "--version")
	require.Equal(t, 0, code)
	require.Equal(t, "swarm version dev\n", stdout)

	bin := filepath.Join(t.TempDir(), "swarm")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/swarmllm/swarm/swarm.Version=v9.8.7-test", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	got, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Equal(t, "swarm version v9.8.7-test\n", string(got))
}
