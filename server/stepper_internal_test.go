package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestPlanBatch checks the batch plan: one row for every waiting step
// first, then the rest earliest first, within the budget.
func TestPlanBatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		left   []int
		budget int
		want   []int
	}{
		{"decode steps", []int{1, 1, 1}, 64, []int{1, 1, 1}},
		{"prefill fills the rest", []int{100, 1, 1}, 64, []int{62, 1, 1}},
		{"later prefill after earlier", []int{1, 40, 40}, 64, []int{1, 40, 23}},
		{"more steps than rows", []int{5, 1, 1, 1}, 3, []int{1, 1, 1, 0}},
		{"zero budget takes one row", []int{7}, 0, []int{1}},
		{"nothing waits", nil, 64, []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, planBatch(tc.left, tc.budget))
		})
	}
}

// TestStepLowerBound: a session's step takes at least its k blocks at
// tau_j times the batch curve's factor for the open sessions (numbers by
// hand: curve 1: 10 ms, 4: 13 ms per block).
func TestStepLowerBound(t *testing.T) {
	curve := []swarm.BatchTau{{Batch: 1, Tau: 0.010}, {Batch: 4, Tau: 0.013}}
	for _, tc := range []struct {
		name     string
		observed float64
		open     int
		curve    []swarm.BatchTau
		want     float64
	}{
		{"alone: 3 blocks x 10 ms", 0, 1, curve, 0.030},
		{"4 sessions batched: x 1.3", 0, 4, curve, 0.039},
		{"no curve: tau whatever the load", 0, 4, nil, 0.030},
		{"slower steps observed win", 0.1, 4, curve, 0.1},
	} {
		require.InDelta(t, tc.want, stepLowerBound(tc.observed, 3, 0.010, tc.curve, tc.open), 1e-12, tc.name)
	}
}
