package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// TestSlidingWindowPlacementMemory gives tinyFleet's model a 16-token
// window on blocks 0 and 2 (pattern 2) and sessions of 100 + 100 tokens:
// those blocks hold 16 + swarm.SlidingRewind = 80 positions (80 bytes),
// the global ones 200. With 800 bytes per server, m_j of Alg. 1 line 1 is
// 3 (300 + 480 for the heaviest 3 blocks, 200+80+200), where one s_c for
// every block gives floor(800/300) = 2. Every algorithm then runs the
// request within its cache slots (the engine checks them).
func TestSlidingWindowPlacementMemory(t *testing.T) {
	require.Equal(t, 64, swarm.SlidingRewind, "the figures above")
	w := Workload{Rate: 1, Requests: 1, InputTokens: 100, OutputTokens: 100}
	f := tinyFleet(800)
	f.Petals.CacheTokens = 200 // PETALS reserves a global block's s_c per block
	f.Model.SlidingWindow, f.Model.SlidingPattern = 16, 2
	in := f.placementInput(w, 1, nil, nil)
	require.Equal(t, []int64{80, 200, 80, 200}, in.Model.BlockCacheBytes)
	require.Equal(t, int64(200), in.Model.CacheBytes)
	for j := range f.Servers {
		require.Equal(t, 3, placement.ConservativeBlocks(in, j))
	}
	res, err := Run(f, w, Algorithms(), rand.New(rand.NewPCG(1, 2)), nil)
	require.NoError(t, err)
	for _, r := range res {
		require.Empty(t, r.Errors, r.Algorithm)
		require.Equal(t, 1, r.Runs, r.Algorithm)
	}

	f.Model.SlidingWindow, f.Model.SlidingPattern = 0, 0
	in = f.placementInput(w, 1, nil, nil)
	require.Nil(t, in.Model.BlockCacheBytes)
	for j := range f.Servers {
		require.Equal(t, 2, placement.ConservativeBlocks(in, j))
	}
	f.Model.SlidingWindow = -1
	require.ErrorIs(t, f.Validate(), ErrBadConfig)
}
