package server

import (
	"context"
	"slices"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// batchSizes are the batch sizes whose decode time is measured for
// swarm.ServerInfo.TauBatch, and batchHistory the positions each session
// holds in its cache when its step is timed.
var batchSizes = []int{1, 2, 4, 8, 16}

const batchHistory = 8

// measureBatches times, for each b in batchSizes, a batch of b single-token
// decode steps of b sessions (each with batchHistory cached positions) in
// one ForwardBatch call (prefillReps times) and returns the medians per
// block.
// x is one token's hidden state [DModel].
func measureBatches(ctx context.Context, e blocks.BatchEngine, x []float32) ([]swarm.BatchTau, error) {
	span := e.Span()
	sessions := make([]blocks.Session, 0, slices.Max(batchSizes))
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	history := make([]float32, 0, batchHistory*len(x))
	for range batchHistory {
		history = append(history, x...)
	}
	m := float64(span.Len())
	var out []swarm.BatchTau
	for _, b := range batchSizes {
		for len(sessions) < b {
			s, err := e.NewSession(span, batchHistory+1)
			if err != nil {
				return nil, err
			}
			sessions = append(sessions, s)
			if _, err := s.Forward(ctx, 0, history, batchHistory); err != nil {
				return nil, err
			}
		}
		steps := make([]blocks.Step, b)
		for i := range steps {
			steps[i] = blocks.Step{Session: sessions[i], Pos: batchHistory, Hidden: x, NTokens: 1}
		}
		reps := make([]float64, prefillReps)
		for r := range reps {
			start := time.Now()
			for _, res := range e.ForwardBatch(ctx, steps) {
				if res.Err != nil {
					return nil, res.Err
				}
			}
			reps[r] = time.Since(start).Seconds() / m
		}
		out = append(out, swarm.BatchTau{Batch: b, Tau: median(reps)})
	}
	return out, nil
}
