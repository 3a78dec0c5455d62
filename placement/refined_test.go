package placement_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
)

// TestRefinedVsOptimalTable prints refined/optimal and cgbp/optimal over
// 200 random tiny fleets of each distribution (run with -v to see it).
func TestRefinedVsOptimalTable(t *testing.T) {
	var cs []placement.Comparison
	for _, d := range placement.TinyFleetDistributions {
		c, err := placement.CompareWithOptimal(200, 16, d)
		require.NoError(t, err)
		cs = append(cs, c)
	}
	t.Logf("\n%s", placement.FormatComparisons(cs))
}
