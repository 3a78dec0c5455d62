package swarm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/swarmllm/swarm/swarm"
)

// TestBatchFactor: ratios by hand from a curve measured at 1, 2, 4 and 8
// sessions (seconds per block for the whole batch).
func TestBatchFactor(t *testing.T) {
	curve := []swarm.BatchTau{{Batch: 1, Tau: 0.010}, {Batch: 2, Tau: 0.011}, {Batch: 4, Tau: 0.013}, {Batch: 8, Tau: 0.017}}
	for _, c := range []struct {
		name  string
		curve []swarm.BatchTau
		b     int
		want  float64
	}{
		{"alone", curve, 1, 1},
		{"no session counts as alone", curve, 0, 1},
		{"measured", curve, 4, 1.3},
		{"between 2 and 4", curve, 3, 1.2},
		{"between 4 and 8", curve, 6, 1.5},
		{"past 8: the last slope, 0.001 per session", curve, 10, 1.9},
		{"no curve", nil, 16, 1},
		{"no batch of 1", []swarm.BatchTau{{Batch: 2, Tau: 0.02}}, 2, 1},
		{"only a batch of 1", curve[:1], 5, 1},
		{"a falling tail never extrapolates below its last point", []swarm.BatchTau{{Batch: 1, Tau: 0.01}, {Batch: 2, Tau: 0.012}, {Batch: 4, Tau: 0.011}}, 8, 1.1},
	} {
		assert.InDelta(t, c.want, swarm.BatchFactor(c.curve, c.b), 1e-12, c.name)
	}
}
