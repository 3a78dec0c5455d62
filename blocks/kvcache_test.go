package blocks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
)

// TestPagedCachesHoldWhatTheyFill: a session holds attention-cache pages
// of 64 positions only as its steps reach them, full caches and rings
// alike, while CacheBytes stays the size it was admitted for. Expected
// bytes are counted by hand: the model has 4 blocks, blocks 0 and 2
// sliding with rings of window 8 + 64 = 72 positions, K and V float32.
func TestPagedCachesHoldWhatTheyFill(t *testing.T) {
	m, _ := slidingModel(t)
	info := m.model.Info()
	row := int64(2 * 4 * info.NKVHeads * info.HeadDim) // K and V of one position, bytes
	const maxLength = 300
	s, err := m.engine.NewSession(info.Blocks(), maxLength)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, row*(72+300+72+300), s.CacheBytes(), "admitted for every position")
	require.Zero(t, s.HeldBytes())

	tokens := make([]int, maxLength)
	for i := range tokens {
		tokens[i] = (3*i + 2) % info.Vocab
	}
	step := func(pos, n int) {
		t.Helper()
		x, err := m.head.Embed(tokens[pos : pos+n])
		require.NoError(t, err)
		_, err = s.Forward(t.Context(), pos, x, n)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		pos, n int
		held   int64 // bytes: the 2 full blocks' rows, then the 2 rings'
	}{
		{0, 1, 4 * 64 * row},             // one page in each of the 4 blocks
		{1, 63, 4 * 64 * row},            // position 63: still the first page
		{64, 1, 2*128*row + 2*72*row},    // full: 2 pages; ring: 64 + its last 8 rows
		{65, 100, 2*192*row + 2*72*row},  // 165 positions: 3 pages; rings full
		{120, 5, 2*192*row + 2*72*row},   // a rewind keeps the pages
		{125, 175, 2*300*row + 2*72*row}, // the whole length: the last page is partial (300 = 4*64 + 44)
	} {
		step(c.pos, c.n)
		require.Equal(t, c.held, s.HeldBytes(), "after positions %d..%d", c.pos, c.pos+c.n-1)
	}
	require.Equal(t, s.CacheBytes(), s.HeldBytes(), "a full session holds what it was admitted for")
	require.Equal(t, s.CacheBytes(), blocks.CapacityCacheBytes(s))
}
