package p2p

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"
)

func TestLoadOrCreateIdentity_CreatesThenReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.key")
	k1, created, err := LoadOrCreateIdentity(path)
	require.NoError(t, err)
	require.True(t, created)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	k2, created, err := LoadOrCreateIdentity(path)
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, k1.Equals(k2))
	id, err := PeerIDFromKey(k2)
	require.NoError(t, err)
	_, err = peer.Decode(id.String())
	require.NoError(t, err)

	// No temporary files are left beside it.
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

func TestLoadOrCreateIdentity_BadFilesAreErrorsAndKept(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
	}{
		{name: "empty", content: nil},
		{name: "garbage", content: []byte("this is not a key\n")},
		{name: "truncated", content: []byte{0x08, 0x01, 0x12, 0x40, 0x01}},
		{name: "too large", content: make([]byte, maxIdentityBytes+10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "node.key")
			require.NoError(t, os.WriteFile(path, tt.content, 0o600))
			_, _, err := LoadOrCreateIdentity(path)
			require.ErrorIs(t, err, ErrBadIdentity)
			require.Contains(t, err.Error(), path)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, len(tt.content), len(got), "a bad identity file must never be replaced")
		})
	}
}

func TestLoadOrCreateIdentity_MissingDirectory(t *testing.T) {
	_, _, err := LoadOrCreateIdentity(filepath.Join(t.TempDir(), "no", "such", "dir", "node.key"))
	require.Error(t, err)
	_, _, err = LoadOrCreateIdentity("")
	require.ErrorIs(t, err, ErrBadIdentity)
}

func TestLoadOrCreateIdentity_ConcurrentCreatorsAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.key")
	const n = 8
	ids := make([]peer.ID, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, c, err := LoadOrCreateIdentity(path)
			require.NoError(t, err)
			ids[i], err = PeerIDFromKey(k)
			require.NoError(t, err)
			created[i] = c
		})
	}
	wg.Wait()
	nCreated := 0
	for i := range n {
		require.Equal(t, ids[0], ids[i])
		if created[i] {
			nCreated++
		}
	}
	require.Equal(t, 1, nCreated)
}

func TestSwarmKey_RoundTripAndBadFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "swarm.key")
	require.NoError(t, WriteNewSwarmKey(path))
	psk, err := LoadSwarmKey(path)
	require.NoError(t, err)
	require.Len(t, psk, 32)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.Error(t, WriteNewSwarmKey(path), "an existing key must not be overwritten")

	bad := map[string]string{
		"no header":  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
		"bad hex":    "/key/swarm/psk/1.0.0/\n/base16/\nzz23456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
		"bad base":   "/key/swarm/psk/1.0.0/\n/base99/\n00\n",
		"short key":  "/key/swarm/psk/1.0.0/\n/base16/\n0123\n",
		"empty file": "",
	}
	for name, content := range bad {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
			_, err := LoadSwarmKey(p)
			require.ErrorIs(t, err, ErrBadSwarmKey)
		})
	}
	_, err = LoadSwarmKey(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, ErrBadSwarmKey)
}
