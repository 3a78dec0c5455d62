package placement_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
)

// slidingModel has 6 blocks of 100 bytes whose caches follow a Gemma 3
// style pattern of 3: blocks 2 and 5 are global (60 bytes per session),
// the others slide (20 bytes); uniform is the same model with one s_c.
var (
	slidingModel = placement.Model{Blocks: 6, BlockBytes: 100, CacheBytes: 60, BlockCacheBytes: []int64{20, 20, 60, 20, 20, 60}}
	uniformModel = placement.Model{Blocks: 6, BlockBytes: 100, CacheBytes: 60}
)

// oneServer is an input of model with one server of memory bytes and R
// sessions.
func oneServer(model placement.Model, memory int64, r int) placement.Input {
	return placement.Input{
		Model: model, Clients: []string{"c"}, Sessions: r,
		Servers: []placement.Server{{Name: "s", MemoryBytes: memory, Tau: 0.01, RTT: []float64{0.01}}},
	}
}

// TestBlockCacheBytesTable checks eq. (2)'s memory per block by hand:
// the heaviest window of n blocks, m_j of Alg. 1 line 1, f_j of eq. (15)
// and the cache slots of eq. (20), for the sliding model and the same
// model with one s_c for every block.
func TestBlockCacheBytesTable(t *testing.T) {
	for _, c := range []struct {
		n           int
		sliding, un int64
	}{
		{0, 0, 0}, {1, 60, 60}, {2, 80, 120}, {3, 100, 180}, {4, 160, 240}, {5, 180, 300}, {6, 200, 360}, {9, 200, 360},
	} {
		require.Equal(t, c.sliding, slidingModel.WindowCacheBytes(c.n), "sliding window of %d blocks", c.n)
		require.Equal(t, c.un, uniformModel.WindowCacheBytes(c.n), "uniform window of %d blocks", c.n)
	}
	for _, c := range []struct {
		name        string
		memory      int64
		r           int
		sliding, un int
	}{
		// 100 n + R W(n) <= M: 600 + 2*200 = 1000; uniform 1000/(100+2*60).
		{"all blocks", 1000, 2, 6, 4},
		// n = 4 needs 400 + 2*160 = 720.
		{"three blocks", 700, 2, 3, 3},
		{"four blocks", 900, 3, 4, 3},
		{"none", 150, 2, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.sliding, placement.ConservativeBlocks(oneServer(slidingModel, c.memory, c.r), 0))
			require.Equal(t, c.un, placement.ConservativeBlocks(oneServer(uniformModel, c.memory, c.r), 0))
		})
	}
	for _, c := range []struct {
		name                  string
		memory                int64
		m                     int
		capacity, slots       int
		uniCapacity, uniSlots int
	}{
		// free 600: 600/160 sessions of the heaviest 4 blocks, 600*4/160 slots.
		{"four blocks", 1000, 4, 3, 15, 2, 10},
		{"one block", 1000, 1, 15, 15, 15, 15},
		{"all blocks", 1000, 6, 2, 12, 1, 6},
		{"blocks alone do not fit", 500, 6, 0, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, u := oneServer(slidingModel, c.memory, 1), oneServer(uniformModel, c.memory, 1)
			require.Equal(t, c.capacity, placement.Capacity(s, 0, c.m))
			require.Equal(t, c.slots, placement.CacheSlots(s, 0, c.m))
			require.Equal(t, c.uniCapacity, placement.Capacity(u, 0, c.m))
			require.Equal(t, c.uniSlots, placement.CacheSlots(u, 0, c.m))
		})
	}
}

// TestCGBPSlidingBlocks places the sliding model on two servers of 650
// bytes for R = 2: per block each holds 3 blocks (300 + 2*100), so CG-BP
// covers all 6, where one s_c for every block gives each 2 (650/220) and
// (18) fails. Every server's span then fits its weights and R sessions'
// caches over exactly its blocks (eq. 2).
func TestCGBPSlidingBlocks(t *testing.T) {
	in := oneServer(slidingModel, 650, 2)
	in.Servers = append(in.Servers, placement.Server{Name: "t", MemoryBytes: 650, Tau: 0.02, RTT: []float64{0.01}})
	require.True(t, placement.Feasible(in))
	plan, err := placement.CGBP(in)
	require.NoError(t, err)
	covered := make([]bool, in.Model.Blocks)
	for j, sp := range plan.Spans {
		require.Equal(t, 3, sp.Len(), "server %d", j)
		require.LessOrEqual(t, in.Model.BlockBytes*int64(sp.Len())+int64(in.Sessions)*in.Model.SpanCacheBytes(sp), in.Servers[j].MemoryBytes)
		require.GreaterOrEqual(t, plan.Capacity[j], in.Sessions)
		for b := sp.Start; b < sp.End; b++ {
			covered[b] = true
		}
	}
	require.Equal(t, []bool{true, true, true, true, true, true}, covered)

	in.Model = uniformModel
	require.False(t, placement.Feasible(in))
	_, err = placement.CGBP(in)
	require.ErrorIs(t, err, placement.ErrInfeasible)
}

// TestBlockCacheBytesValidate refuses per-block bytes of the wrong count
// or outside 1..CacheBytes.
func TestBlockCacheBytesValidate(t *testing.T) {
	for _, c := range []struct {
		bytes []int64
		err   string
	}{
		{[]int64{20, 60}, "model.block_cache_bytes has 2 entries, want one per block (6)"},
		{[]int64{20, 20, 61, 20, 20, 60}, "model.block_cache_bytes[2] = 61, want 1..cache_bytes_per_block (60)"},
		{[]int64{20, 0, 60, 20, 20, 60}, "model.block_cache_bytes[1] = 0"},
	} {
		m := slidingModel
		m.BlockCacheBytes = c.bytes
		err := oneServer(m, 1000, 1).Validate()
		require.ErrorIs(t, err, placement.ErrBadInput)
		require.ErrorContains(t, err, c.err)
	}
}

// TestPerBlockMemoryProperty draws fleets, gives their models a random
// local:global pattern (sliding blocks need a random fraction of a global
// block's s_c) and checks eq. (2) per block on CG-BP's plans: every
// server's f_j sessions fit over exactly its span, its cache slots fit in
// its free memory at the span's mean s_c, it never gets fewer blocks than
// with one s_c for every block, and condition (18) still decides whether
// every block is covered.
func TestPerBlockMemoryProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	feasible := 0
	for trial := range 300 {
		in := randomFleet(rng, 12, 6, 2, true)
		uniform := in
		pattern := 1 + rng.IntN(7)
		local := 1 + rng.Int64N(in.Model.CacheBytes)
		in.Model.BlockCacheBytes = make([]int64, in.Model.Blocks)
		for b := range in.Model.BlockCacheBytes {
			in.Model.BlockCacheBytes[b] = in.Model.CacheBytes
			if (b+1)%pattern != 0 {
				in.Model.BlockCacheBytes[b] = local
			}
		}
		require.NoError(t, in.Validate())
		for j := range in.Servers {
			require.GreaterOrEqual(t, placement.ConservativeBlocks(in, j), placement.ConservativeBlocks(uniform, j), "trial %d server %d", trial, j)
		}
		plan, err := placement.CGBP(in)
		if !placement.Feasible(in) {
			require.ErrorIs(t, err, placement.ErrInfeasible, "trial %d", trial)
			continue
		}
		require.NoError(t, err, "trial %d", trial)
		covered := make([]bool, in.Model.Blocks)
		for j, sp := range plan.Spans {
			if sp.Empty() {
				continue
			}
			free := in.Servers[j].MemoryBytes - in.Model.BlockBytes*int64(sp.Len())
			require.GreaterOrEqual(t, plan.Capacity[j], in.Sessions, "trial %d server %d", trial, j)
			require.LessOrEqual(t, int64(plan.Capacity[j])*in.Model.SpanCacheBytes(sp), free, "trial %d server %d: f_j sessions fit", trial, j)
			require.LessOrEqual(t, int64(plan.CacheSlots[j])*in.Model.SpanCacheBytes(sp), free*int64(sp.Len()), "trial %d server %d: slots fit", trial, j)
			for b := sp.Start; b < sp.End; b++ {
				covered[b] = true
			}
		}
		require.NotContains(t, covered, false, "trial %d", trial)
		feasible++
	}
	require.Greater(t, feasible, 50, "enough feasible fleets to check")
	t.Logf("%d of 300 fleets feasible", feasible)
}
