package blocks

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestScratchRegrowsForAnotherShape: a scratch from the shared pool that
// holds rows enough for one model but was sized for another shape must be
// sized anew (it was not, and a batch of a smaller-headed model then
// overran its RoPE rows).
func TestScratchRegrowsForAnotherShape(t *testing.T) {
	var s scratch
	big := swarm.ModelInfo{DModel: 64, NHeads: 16, NKVHeads: 16, HeadDim: 4, FFNDim: 128}
	s.grow(big, 16)
	other := swarm.ModelInfo{DModel: 64, NHeads: 8, NKVHeads: 4, HeadDim: 8, FFNDim: 172}
	s.grow(other, 9)
	require.GreaterOrEqual(t, len(s.cos), 9*other.HeadDim/2)
	require.GreaterOrEqual(t, len(s.hb), 9*other.FFNDim)
	require.GreaterOrEqual(t, len(s.k), 9*other.NKVHeads*other.HeadDim)
	s.grow(other, 4) // fewer rows of the same shape: kept
	require.Equal(t, 9, s.n)
}
