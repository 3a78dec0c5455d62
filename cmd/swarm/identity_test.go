package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// runP2PCmd runs the real swarm binary and returns stdout, stderr and the
// exit status.
func runP2PCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.SwarmBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

func TestIdentity_CreatesOncePrintsPeerID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.key")
	out, errOut, code := runP2PCmd(t, "identity", "--identity", path)
	require.Zero(t, code, errOut)
	require.Contains(t, errOut, "created a new identity")
	id := strings.TrimSpace(out)
	_, err := peer.Decode(id)
	require.NoError(t, err, "stdout must be exactly a peer id: %q", out)
	require.True(t, strings.HasPrefix(id, "12D3KooW"), "an Ed25519 peer id, got %s", id)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	out2, errOut2, code := runP2PCmd(t, "identity", "--identity", path)
	require.Zero(t, code)
	require.Equal(t, out, out2, "the same file gives the same peer id")
	require.Empty(t, errOut2)

	out3, _, code := runP2PCmd(t, "identity", "--identity", path, "--json")
	require.Zero(t, code)
	var j struct {
		ID      string `json:"id"`
		File    string `json:"file"`
		Created bool   `json:"created"`
	}
	require.NoError(t, json.Unmarshal([]byte(out3), &j))
	require.Equal(t, id, j.ID)
	require.Equal(t, path, j.File)
	require.False(t, j.Created)
}

func TestIdentity_Errors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.key")
	require.NoError(t, os.WriteFile(bad, []byte("not a key\n"), 0o600))
	_, errOut, code := runP2PCmd(t, "identity", "--identity", bad)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "bad identity file")
	require.Contains(t, errOut, bad)
	got, err := os.ReadFile(bad)
	require.NoError(t, err)
	require.Equal(t, "not a key\n", string(got), "a corrupt identity is never replaced")

	_, errOut, code = runP2PCmd(t, "identity")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--identity FILE is required")

	_, errOut, code = runP2PCmd(t, "identity", "--identity", filepath.Join(dir, "missing-dir", "x.key"))
	require.Equal(t, 1, code, errOut)

	_, _, code = runP2PCmd(t, "identity", "--bogus")
	require.Equal(t, 2, code)
}

func TestIdentity_NewSwarmKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "swarm.key")
	_, errOut, code := runP2PCmd(t, "identity", "--new-swarm-key", path)
	require.Zero(t, code, errOut)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Equal(t, []string{"/key/swarm/psk/1.0.0/", "/base16/"}, lines[:2])
	require.Len(t, lines[2], 64)
	_, _, code = runP2PCmd(t, "identity", "--new-swarm-key", path)
	require.Equal(t, 1, code, "an existing key is never overwritten")
}
