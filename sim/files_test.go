package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// A two-server fleet file as placement.Input: s_c = 1480 bytes for sessions
// of 148 tokens gives 10 bytes per token; PETALS' budget 40960 bytes per
// block is 4096 tokens of 10 bytes.
func TestFleetFromInput(t *testing.T) {
	in := placement.Input{
		Model:   placement.Model{Blocks: 4, BlockBytes: 100, CacheBytes: 1480},
		Clients: []string{"c0", "c1"},
		Petals:  placement.PetalsParams{CacheBytesPerBlock: 40960, ReservedBytes: 7},
		Servers: []placement.Server{
			{Name: "a100-1", MemoryBytes: 1000, Tau: 0.01, RTT: []float64{0.1, 0.3}, MaxBlocks: 3},
			{Name: "mig_12", MemoryBytes: 500, Tau: 0.02, RTT: []float64{0.2, 0.5}},
		},
	}
	f, err := FleetFromInput(in, "c1", 148)
	require.NoError(t, err)
	require.Equal(t, int64(10), f.Model.CacheBytesPerToken)
	require.Equal(t, int64(1480), f.Model.CacheBytes(20, 128))
	require.Equal(t, []float64{0.3, 0.5}, f.ClientRTT)
	require.Equal(t, [][]float64{{0, 0.4}, {0.4, 0}}, f.ServerRTT)
	require.Equal(t, 0.3, f.TokenRTT(0), "the file's t_cj is the whole per-token cost")
	require.Equal(t, 4096, f.Petals.CacheTokens)
	require.Equal(t, int64(7), f.Petals.ReservedBytes)
	require.Equal(t, "a100", f.Servers[0].Hardware.Kind)
	require.Equal(t, "mig", f.Servers[1].Hardware.Kind)
	require.Equal(t, 3, f.Servers[0].Hardware.MaxBlocks)
	require.Equal(t, 0.02, f.Servers[1].Hardware.TauI.At(20), "prefill: one decode step per block")

	_, err = FleetFromInput(in, "c9", 148)
	require.ErrorIs(t, err, ErrBadConfig)

	g := f.Clone()
	g.Servers[0].Name, g.ClientRTT[0], g.ServerRTT[0][1] = "x", 9, 9
	require.Equal(t, "a100-1", f.Servers[0].Name)
	require.Equal(t, 0.3, f.ClientRTT[0])
	require.Equal(t, 0.4, f.ServerRTT[0][1])
}

func TestModelFromInfo(t *testing.T) {
	m, err := ModelFromInfo(swarm.ModelInfo{Name: "stories260K", NBlocks: 5, BlockBytes: 181760, CacheBytesPerToken: 256})
	require.NoError(t, err)
	require.Equal(t, ModelSpec{Name: "stories260K", Blocks: 5, BlockBytes: 181760, CacheBytesPerToken: 256}, m)
	_, err = ModelFromInfo(swarm.ModelInfo{Name: "empty"})
	require.ErrorIs(t, err, ErrBadConfig)
}
