package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// memMember is one registry replica on an in-memory network.
type memMember struct {
	id  string
	tr  *memtransport.Transport
	reg *registry.Registry
}

func startMem(t *testing.T, net *memtransport.Network, name string) *memMember {
	t.Helper()
	key := registrytest.Key(t, name)
	id, err := peer.IDFromPrivateKey(key)
	require.NoError(t, err)
	tr := net.Join(id.String())
	reg, err := registry.New(tr, key, registrytest.FakeClockConfig())
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
