package placement_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// randomFleet draws a fleet of up to maxServers servers over an L-block
// model (1 <= L <= maxL) with up to maxClients clients and R in [1, 8].
func randomFleet(rng *rand.Rand, maxL, maxServers, maxClients int, caps bool) placement.Input {
	l := 1 + rng.IntN(maxL)
	sm := int64(100 + rng.IntN(900))
	in := placement.Input{
		Model:    placement.Model{Blocks: l, BlockBytes: sm, CacheBytes: 1 + rng.Int64N(sm/4)},
		Sessions: 1 + rng.IntN(8),
	}
	for c := range 1 + rng.IntN(maxClients) {
		in.Clients = append(in.Clients, fmt.Sprintf("c%d", c))
	}
	for j := range 1 + rng.IntN(maxServers) {
		perBlock := in.Model.BlockBytes + in.Model.CacheBytes*int64(in.Sessions)
		s := placement.Server{
			Name:        fmt.Sprintf("s%d", j),
			MemoryBytes: perBlock*int64(rng.IntN(l+1)) + rng.Int64N(perBlock),
			Tau:         0.001 + 0.05*rng.Float64(),
		}
		for range in.Clients {
			s.RTT = append(s.RTT, 0.2*rng.Float64())
		}
		if caps && rng.IntN(4) == 0 {
			s.MaxBlocks = 1 + rng.IntN(l)
		}
		in.Servers = append(in.Servers, s)
	}
	return in
}

// routeAll routes one session per client with WS-RR (no open sessions) on
// a plan and returns each client's per-token time.
func routeAll(t *testing.T, in placement.Input, plan placement.Plan) []float64 {
	out := make([]float64, len(in.Clients))
	for c := range in.Clients {
		var servers []routing.Server
		for j, s := range in.Servers {
			if plan.Spans[j].Empty() {
				continue
			}
			servers = append(servers, routing.Server{Name: s.Name, Span: plan.Spans[j], Tau: s.Tau, RTT: s.RTT[c], CacheSlots: plan.CacheSlots[j]})
		}
		r, err := routing.WSRR(servers, routing.Request{Blocks: in.Model.Blocks, MaxLength: 1})
		require.NoError(t, err)
		out[c] = r.PerToken
	}
	return out
}

// TestEq17_UpperBoundHolds is the property test of Theorem 3.5 and
// Lemma B.1 on random fleets: on every feasible CG-BP placement, the
// per-token time of every client's shortest route lies between the lower
// bound (B.8) and the upper bound (17); and the first K servers in t~ order
// are laid end to end (Lemma 3.3).
func TestEq17_UpperBoundHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	checked := 0
	for iter := range 600 {
		in := randomFleet(rng, 40, 15, 3, true)
		plan, err := placement.CGBP(in)
		if err != nil {
			require.ErrorIs(t, err, placement.ErrInfeasible, "iter %d", iter)
			require.False(t, placement.Feasible(in), "iter %d: CG-BP failed although (18) holds", iter)
			continue
		}
		require.True(t, placement.Feasible(in), "iter %d", iter)
		ub, err := placement.UpperBound(in)
		require.NoError(t, err)
		for c, perToken := range routeAll(t, in, plan) {
			lb, err := placement.ClientLowerBound(in, c)
			require.NoError(t, err)
			require.LessOrEqual(t, perToken, ub+1e-12, "iter %d client %d: (17) violated", iter, c)
			require.GreaterOrEqual(t, perToken, lb-1e-12, "iter %d client %d: (B.8) violated", iter, c)
		}
		// Lemma 3.3: a_k = m_1 + ... + m_{k-1} for k < K, a_K = L - m_K.
		next := 0
		for _, j := range plan.Order {
			sp := plan.Spans[j]
			if next+sp.Len() >= in.Model.Blocks {
				require.Equal(t, in.Model.Blocks, sp.End, "iter %d: a_K = L - m_K", iter)
				break
			}
			require.Equal(t, next, sp.Start, "iter %d: server %s", iter, in.Servers[j].Name)
			next = sp.End
		}
		checked++
	}
	t.Logf("(17), (B.8) and Lemma 3.3 checked on %d feasible random fleets", checked)
	require.Greater(t, checked, 200)
}

// TestCGBPVsOptimal compares CG-BP with the exhaustive optimum of BPRR (6)
// on random tiny fleets. It checks optimum <= CG-BP <= (17) and
// optimum >= (B.8), that the optimal routing (16) under CG-BP's placement
// equals the clients' shortest routes (Lemma 3.4), and logs the worst
// ratio T^g / T^o.
func TestCGBPVsOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 5))
	worst, worstIter, compared := 1.0, -1, 0
	for iter := range 400 {
		in := randomFleet(rng, 4, 4, 2, false)
		in.Sessions = 1 + rng.IntN(4)
		plan, err := placement.CGBP(in)
		if err != nil {
			continue
		}
		g, err := placement.RoutedPerToken(in, plan.Spans)
		require.NoError(t, err, "iter %d", iter)
		demand := make([]int, len(in.Clients)) // R split evenly, as Input.Demand nil does
		for c := range demand {
			demand[c] = in.Sessions / len(demand)
			if c < in.Sessions%len(demand) {
				demand[c]++
			}
		}
		shortest := 0.0
		for c, v := range routeAll(t, in, plan) {
			shortest += float64(demand[c]) * v
		}
		require.InDelta(t, shortest/float64(in.Sessions), g, 1e-12, "iter %d: Lemma 3.4", iter)

		_, o, err := placement.OptimalPerToken(in)
		require.NoError(t, err, "iter %d", iter)
		ub, err := placement.UpperBound(in)
		require.NoError(t, err)
		lb, err := placement.LowerBound(in)
		require.NoError(t, err)
		require.LessOrEqual(t, o, g+1e-12, "iter %d: the optimum is worse than CG-BP", iter)
		require.LessOrEqual(t, g, ub+1e-12, "iter %d: (17)", iter)
		require.GreaterOrEqual(t, o, lb-1e-12, "iter %d: (B.8)", iter)
		if g/o > worst {
			worst, worstIter = g/o, iter
		}
		compared++
	}
	t.Logf("CG-BP vs exhaustive optimum on %d random tiny fleets (L <= 4, <= 4 servers, <= 2 clients, R <= 4): worst T^g/T^o = %.4f (iter %d)",
		compared, worst, worstIter)
	require.Greater(t, compared, 150)
}

// TestIncrementalReproducesCGBP: a server joining the servers CG-BP placed
// before it (in t~ order) gets exactly the span CG-BP gave it.
func TestIncrementalReproducesCGBP(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	joins := 0
	for iter := range 300 {
		in := randomFleet(rng, 30, 10, 2, true)
		plan, err := placement.CGBP(in)
		if err != nil {
			continue
		}
		fixed := make([]swarm.Span, len(in.Servers))
		for _, j := range plan.Order {
			got, err := placement.Incremental(in, fixed, j)
			require.NoError(t, err, "iter %d", iter)
			require.Equal(t, plan.Spans[j], got, "iter %d server %s", iter, in.Servers[j].Name)
			fixed[j] = got
			joins++
		}
	}
	require.Greater(t, joins, 500)
}

// TestEq19_ImpliesEq18: R from (19) always satisfies (18) (without
// MaxBlocks caps), and LargestFeasibleSessions is the exact threshold.
func TestEq19_ImpliesEq18(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 18))
	for iter := range 500 {
		in := randomFleet(rng, 40, 15, 2, iter%2 == 0)
		if r := placement.MaxSessions(in); r >= 1 && iter%2 == 1 {
			in.Sessions = r
			require.True(t, placement.Feasible(in), "iter %d: (19) gave R = %d but (18) fails", iter, r)
		}
		r := placement.LargestFeasibleSessions(in)
		if r == 0 {
			in.Sessions = 1
			require.False(t, placement.Feasible(in))
			continue
		}
		in.Sessions = r
		require.True(t, placement.Feasible(in), "iter %d", iter)
		in.Sessions = r + 1
		require.False(t, placement.Feasible(in), "iter %d", iter)
	}
}

func TestValidation(t *testing.T) {
	base := func() placement.Input {
		return placement.Input{
			Model:    placement.Model{Blocks: 4, BlockBytes: 100, CacheBytes: 10},
			Clients:  []string{"c0"},
			Sessions: 2,
			Servers:  []placement.Server{{Name: "a", MemoryBytes: 1000, Tau: 0.01, RTT: []float64{0.1}}},
		}
	}
	tests := []struct {
		name   string
		mutate func(*placement.Input)
		want   string
	}{
		{"blocks", func(in *placement.Input) { in.Model.Blocks = 0 }, "model.blocks = 0"},
		{"block bytes", func(in *placement.Input) { in.Model.BlockBytes = -1 }, "model.block_bytes = -1"},
		{"cache bytes", func(in *placement.Input) { in.Model.CacheBytes = 0 }, "model.cache_bytes_per_block = 0"},
		{"sessions", func(in *placement.Input) { in.Sessions = 0 }, "target sessions R = 0"},
		{"no servers", func(in *placement.Input) { in.Servers = nil }, "no servers"},
		{"no clients", func(in *placement.Input) { in.Clients = nil }, "no clients"},
		{"memory", func(in *placement.Input) { in.Servers[0].MemoryBytes = -5 }, "servers[0] (a).memory_bytes = -5"},
		{"rtt count", func(in *placement.Input) { in.Servers[0].RTT = nil }, "servers[0] (a).rtt has 0 entries"},
		{"rtt value", func(in *placement.Input) { in.Servers[0].RTT[0] = -0.1 }, "servers[0] (a).rtt[0] = -0.1"},
		{"max blocks", func(in *placement.Input) { in.Servers[0].MaxBlocks = -1 }, "max_blocks = -1"},
		{"demand sum", func(in *placement.Input) { in.Demand = []int{3} }, "demand sums to 3"},
		{"order", func(in *placement.Input) { in.Order = []int{1} }, "not a permutation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, f := range placement.Algorithms {
				in := base()
				tt.mutate(&in)
				_, err := f(in)
				require.ErrorIs(t, err, placement.ErrBadInput, name)
				require.ErrorContains(t, err, tt.want, name)
			}
		})
	}
	_, err := placement.Lookup("greedy")
	require.ErrorIs(t, err, placement.ErrUnknownAlgorithm)
	require.ErrorContains(t, err, "cgbp, cgbp-live, cgbp-replan, opt-number, opt-order, optimal, petals, refined")

	in := base()
	in.Model.Blocks = 8
	for range 6 {
		in.Servers = append(in.Servers, in.Servers[0])
	}
	in.Servers[6].Tau = 0.5 // break the symmetry so no group is merged
	_, _, err = placement.OptimalPerToken(in)
	require.ErrorIs(t, err, placement.ErrTooLarge)
}
