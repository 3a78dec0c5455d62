package server

import (
	"testing"

	"github.com/stretchr/testify/require"
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
