package placement

import (
	"cmp"
	"math"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// PetalsBlocks returns the number of blocks PETALS gives server j
// (petals.server.server._choose_num_blocks, as replicated by the paper's
// simulator in choose_num_blocks_petals.m): memory minus a fixed reserve,
// divided by the block bytes plus a FIXED attention-cache budget per block,
// whatever the load:
//
//	min(floor((M_j - reserved) / (s_m + B)), L)   (and Server.MaxBlocks)
//
// with B = in.Petals.CacheBytesPerBlock (s_c when 0).
func PetalsBlocks(in Input, j int) int {
	free := in.Servers[j].MemoryBytes - in.Petals.ReservedBytes
	if free <= 0 {
		return 0
	}
	return in.capBlocks(j, free/(in.Model.BlockBytes+in.petalsCacheBudget()))
}

func (in Input) petalsCacheBudget() int64 {
	if in.Petals.CacheBytesPerBlock > 0 {
		return in.Petals.CacheBytesPerBlock
	}
	return in.Model.CacheBytes
}

// PetalsThroughput returns the throughput PETALS credits each block hosted
// by server j with m blocks (petals.server.throughput; compute_throughput.m
// in the paper's simulator): min(forward_rps / ((1+m)/2), network_rps), in
// requests per second. ForwardRPS defaults to 1/tau_j, NetworkRPS to +Inf.
func PetalsThroughput(in Input, j, m int) float64 {
	s := in.Servers[j]
	fwd := s.ForwardRPS
	if fwd == 0 {
		fwd = math.Inf(1)
		if s.Tau > 0 {
			fwd = 1 / s.Tau
		}
	}
	net := s.NetworkRPS
	if net == 0 {
		net = math.Inf(1)
	}
	return min(fwd/(float64(1+m)/2), net)
}

// Petals is the PETALS placement baseline (paper 003 Sec. 4.1 "Benchmark"):
// servers join one at a time in in.Order (nil: index order), each hosts
// PetalsBlocks blocks and takes the window whose sorted per-block total
// throughputs are lexicographically smallest (the most under-served blocks,
// petals.server.block_selection; ties: smallest start), then adds its
// PetalsThroughput to those blocks. PETALS' periodic rebalancing is not
// modelled. Plan.CacheSlots is floor(m_j B / s_c) for the fixed budget B.
// It returns the plan and an *InfeasibleError when a block stays unhosted.
func Petals(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	blocks := make([]int, len(in.Servers))
	for j := range in.Servers {
		blocks[j] = PetalsBlocks(in, j)
	}
	plan := petalsPlace(in, "petals", arrivalOrder(in), blocks)
	for j, m := range blocks {
		plan.CacheSlots[j] = int(int64(m) * in.petalsCacheBudget() / in.Model.CacheBytes)
	}
	return plan, coverage(in, plan, blocks)
}

// OptimizedOrder is the ablation "Optimized Order" of paper 003 Sec. 4.3:
// the PETALS placement with servers joining in CG-BP's order (Alg. 2 line 3:
// increasing t~_j computed with CG-BP's m_j; servers CG-BP leaves empty come
// last, in index order).
func OptimizedOrder(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	order := make([]int, len(in.Servers))
	amort := make([]float64, len(in.Servers))
	for j := range in.Servers {
		order[j] = j
		amort[j] = Amortized(in, j, ConservativeBlocks(in, j))
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(amort[a], amort[b]) })
	in.Order = order
	plan, err := Petals(in)
	plan.Algorithm = "opt-order"
	return plan, err
}

// OptimizedNumber is the ablation "Optimized Number" of paper 003 Sec. 4.3:
// the PETALS placement (arrival order in.Order, throughput-based window
// choice) but with CG-BP's block counts m_j (Alg. 1 line 1), so that the
// memory left for attention caches is sized for R sessions.
// Plan.CacheSlots is floor((M_j - s_m m_j) / s_c) as in the authors'
// Petals_online_hacking.m.
func OptimizedNumber(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	blocks := make([]int, len(in.Servers))
	for j := range in.Servers {
		blocks[j] = ConservativeBlocks(in, j)
	}
	plan := petalsPlace(in, "opt-number", arrivalOrder(in), blocks)
	return plan, coverage(in, plan, blocks)
}

func arrivalOrder(in Input) []int {
	if in.Order != nil {
		return slices.Clone(in.Order)
	}
	order := make([]int, len(in.Servers))
	for j := range order {
		order[j] = j
	}
	return order
}

// petalsPlace runs PETALS' block selection for the given order and counts.
func petalsPlace(in Input, name string, order []int, blocks []int) Plan {
	plan := newPlan(in, name, blocks)
	l := in.Model.Blocks
	throughput := make([]float64, l)
	win, best := make([]float64, 0, l), make([]float64, 0, l)
	for _, j := range order {
		m := blocks[j]
		if m <= 0 {
			continue
		}
		plan.Order = append(plan.Order, j)
		// slide a sorted copy of the window: drop the block leaving,
		// insert the block entering
		win = append(win[:0], throughput[:m]...)
		slices.Sort(win)
		best = append(best[:0], win...)
		bestA := 0
		for a := 1; a+m <= l; a++ {
			i, _ := slices.BinarySearch(win, throughput[a-1])
			win = slices.Delete(win, i, i+1)
			k, _ := slices.BinarySearch(win, throughput[a+m-1])
			win = slices.Insert(win, k, throughput[a+m-1])
			if slices.Compare(win, best) < 0 {
				best = append(best[:0], win...)
				bestA = a
			}
		}
		plan.Spans[j] = swarm.Span{Start: bestA, End: bestA + m}
		tp := PetalsThroughput(in, j, m)
		for b := bestA; b < bestA+m; b++ {
			throughput[b] += tp
		}
	}
	return plan
}
