package admission_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server/admission"
)

func TestEstimateWait(t *testing.T) {
	const u = 100 // bytes per unit
	// Open sessions of the worked example: A holds 2 units for 10 s, B 1 unit
	// for 4 s, C 1 unit for 7 s; the budget of 4 units is full.
	abc := []admission.Held{{Remaining: 10, Bytes: 2 * u}, {Remaining: 4, Bytes: 1 * u}, {Remaining: 7, Bytes: 1 * u}}
	tests := []struct {
		name        string
		budget      int64
		maxSessions int
		open        []admission.Held
		queue       []admission.Pending
		index       int
		want        float64
	}{
		// Eq. (20): after B (t=4) 1 unit is free, after C (t=7) 2 are.
		{"head needs 2 units", 4 * u, 0, abc, []admission.Pending{{Duration: 5, Bytes: 2 * u}}, 0, 7},
		{"head needs 1 unit", 4 * u, 0, abc, []admission.Pending{{Duration: 5, Bytes: 1 * u}}, 0, 4},
		{"head needs all 4", 4 * u, 0, abc, []admission.Pending{{Duration: 5, Bytes: 4 * u}}, 0, 10},
		// X (2 units) gets in at 7 and holds until 12; Y needs 2 more units:
		// A frees them at 10.
		{"second behind X", 4 * u, 0, abc, []admission.Pending{{Duration: 5, Bytes: 2 * u}, {Duration: 1, Bytes: 2 * u}}, 1, 10},
		// FIFO: Y needs 1 unit, free at 4 already, but waits for X at 7;
		// then A+X hold all 4 units until A ends at 10.
		{"small behind large", 4 * u, 0, abc, []admission.Pending{{Duration: 5, Bytes: 2 * u}, {Duration: 1, Bytes: 1 * u}}, 1, 10},
		{"room now", 5 * u, 0, abc, []admission.Pending{{Bytes: 1 * u}}, 0, 0},
		{"idle server", 1 * u, 0, nil, []admission.Pending{{Bytes: 1 * u}}, 0, 0},
		{"never fits", 4 * u, 0, abc, []admission.Pending{{Bytes: 5 * u}}, 0, -1},
		{"index past queue", 4 * u, 0, abc, []admission.Pending{{Bytes: u}}, 1, 0},
		// Session cap 2 with plenty of memory: the first waiter gets the slot
		// freed at 3 and holds it 4 s; the second gets the one freed at 7.
		{"session cap", 100 * u, 2, []admission.Held{{Remaining: 3, Bytes: u}, {Remaining: 8, Bytes: u}},
			[]admission.Pending{{Duration: 4, Bytes: u}, {Duration: 4, Bytes: u}}, 1, 7},
		{"simultaneous releases", 2 * u, 0, []admission.Held{{Remaining: 5, Bytes: u}, {Remaining: 5, Bytes: u}},
			[]admission.Pending{{Bytes: 2 * u}}, 0, 5},
		{"overdue session counts as ending now", 1 * u, 0, []admission.Held{{Remaining: -3, Bytes: u}},
			[]admission.Pending{{Bytes: u}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := slices.Clone(tt.open)
			got := admission.EstimateWait(tt.budget, tt.maxSessions, tt.open, tt.queue, tt.index)
			require.Equal(t, tt.want, got)
			require.Equal(t, open, tt.open, "inputs are not modified")
		})
	}
}

// eq20 is paper 003 eq. (20) written out literally for one new request
// needing `need` caches of one size s_c: with open sessions sorted by
// increasing remaining time T_1 <= ... <= T_R holding M_r caches each,
//
//	t^W = min{ T_k : floor((M - s_m m)/s_c) - sum_{r=k+1}^{R} M_r >= need },  T_0 = 0.
func eq20(capacity int, remaining []float64, caches []int, need int) float64 {
	order := make([]int, len(remaining))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case remaining[a] < remaining[b]:
			return -1
		case remaining[a] > remaining[b]:
			return 1
		}
		return 0
	})
	for k := 0; k <= len(order); k++ {
		held := 0
		for _, r := range order[k:] {
			held += caches[r]
		}
		if capacity-held >= need {
			if k == 0 {
				return 0
			}
			return remaining[order[k-1]]
		}
	}
	return -1
}

// TestEstimateWaitMatchesEq20 compares EstimateWait for the head of the
// queue with the literal eq. (20) on random server states where every cache
// has the same size s_c.
func TestEstimateWaitMatchesEq20(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 20))
	const sc = 65536
	for trial := range 2000 {
		capacity := 1 + rng.IntN(20) // floor((M - s_m m)/s_c) caches
		var open []admission.Held
		var remaining []float64
		var caches []int
		used := 0
		for used < capacity && rng.IntN(8) != 0 {
			k := 1 + rng.IntN(min(5, capacity-used))
			T := float64(rng.IntN(50)) / 2
			open = append(open, admission.Held{Remaining: T, Bytes: int64(k) * sc})
			remaining = append(remaining, T)
			caches = append(caches, k)
			used += k
		}
		need := 1 + rng.IntN(capacity)
		// A budget a little above capacity*s_c: the floor in eq. (20).
		budget := int64(capacity)*sc + int64(rng.IntN(sc))
		got := admission.EstimateWait(budget, 0, open, []admission.Pending{{Duration: 1, Bytes: int64(need) * sc}}, 0)
		require.Equal(t, eq20(capacity, remaining, caches, need), got, "trial %d: capacity %d, open %v, need %d", trial, capacity, open, need)
	}
}
