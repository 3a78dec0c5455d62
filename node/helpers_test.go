package node

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/swarm"
)

// memConfig is a LAN-like registry timing for the fake clock of synctest.
func memConfig() registry.Config {
	return registry.Config{
		HeartbeatInterval:   time.Second,
		SuspectAfter:        3 * time.Second,
		LeftAfter:           10 * time.Second,
		Retention:           time.Minute,
		AntiEntropyInterval: 2 * time.Second,
		MaxClockSkew:        500 * time.Millisecond,
	}
}

// keyFor derives a deterministic Ed25519 key from a name.
func keyFor(t *testing.T, name string) crypto.PrivKey {
	t.Helper()
	var seed [32]byte
	copy(seed[:], name)
	key, _, err := crypto.GenerateEd25519Key(rand.NewChaCha8(seed))
	require.NoError(t, err)
	return key
}

// memMember is one registry replica on an in-memory network.
type memMember struct {
	id  string
	tr  *memtransport.Transport
	reg *registry.Registry
}

func startMem(t *testing.T, net *memtransport.Network, name string) *memMember {
	t.Helper()
	key := keyFor(t, name)
	id, err := peer.IDFromPrivateKey(key)
	require.NoError(t, err)
	tr := net.Join(id.String())
	reg, err := registry.New(tr, key, memConfig())
	require.NoError(t, err)
	m := &memMember{id: id.String(), tr: tr, reg: reg}
	t.Cleanup(func() {
		require.NoError(t, m.reg.Close())
		require.NoError(t, m.tr.Close())
	})
	return m
}

// crash stops a member without announcing LEFT.
func (m *memMember) crash(t *testing.T) {
	t.Helper()
	require.NoError(t, m.tr.Close())
}

// stories is the shape of stories260K as placement and candidates see it
// (L = 5 blocks; the byte sizes are those of the llama2.c checkpoint).
func stories() swarm.ModelInfo {
	return swarm.ModelInfo{Name: "stories260K", NBlocks: 5, DModel: 64, BlockBytes: 181760, CacheBytesPerToken: 256, MaxSeqLen: 512}
}

func span(a, b int) swarm.Span { return swarm.Span{Start: a, End: b} }
