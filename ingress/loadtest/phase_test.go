package loadtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/loadtest"
)

func TestPercentile(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		values []float64
		q      float64
		want   float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.99, 7},
		{ten, 0, 1},
		{ten, 0.5, 5},   // rank ceil(5) = 5
		{ten, 0.51, 6},  // rank ceil(5.1) = 6
		{ten, 0.99, 10}, // rank ceil(9.9) = 10
		{ten, 1, 10},
		{[]float64{1, 2, 3}, 0.5, 2}, // rank ceil(1.5) = 2
	} {
		require.Equal(t, tt.want, loadtest.Percentile(tt.values, tt.q), "%v q=%g", tt.values, tt.q)
	}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	samples := []loadtest.Sample{
		{TTFT: 30 * ms, Total: 130 * ms, Tokens: 11}, // 10 ms per token after the first
		{TTFT: 10 * ms, Total: 50 * ms, Tokens: 5},   // 10 ms
		{Err: errors.New("refused"), TTFT: 1 * ms},
		{TTFT: 20 * ms, Total: 20 * ms, Tokens: 1}, // no TPOT from one token
		{Err: errors.New("reset")},
	}
	p := loadtest.Summarize("direct", samples, 2*time.Second)
	require.Equal(t, loadtest.Phase{
		Name: "direct", Requests: 5, Errors: 2, Tokens: 17,
		TTFTp50: 0.020, TTFTp99: 0.030, Wall: 2, FirstErr: "refused",
	}, withoutTPOT(p))
	require.InDelta(t, 0.010, p.TPOT, 1e-12)

	require.Equal(t, loadtest.Phase{Name: "none"}, loadtest.Summarize("none", nil, 0))
}

func withoutTPOT(p loadtest.Phase) loadtest.Phase {
	p.TPOT = 0
	return p
}

// TestRunPhase: rounds of concurrency calls, never more at once, each
// handed the context.
func TestRunPhase(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	var mu sync.Mutex // guards inFlight, most, calls
	inFlight, most, calls := 0, 0, 0
	release := make(chan struct{})
	req := func(ctx context.Context) loadtest.Sample {
		require.Equal(t, "v", ctx.Value(key{}))
		mu.Lock()
		inFlight++
		calls++
		most = max(most, inFlight)
		wait := release
		if inFlight == 3 {
			close(release) // the whole round has started
			release = make(chan struct{})
		}
		mu.Unlock()
		<-wait
		mu.Lock()
		inFlight--
		mu.Unlock()
		return loadtest.Sample{TTFT: time.Millisecond, Total: 3 * time.Millisecond, Tokens: 3}
	}
	p := loadtest.RunPhase(ctx, "proxy", 3, 2, req)
	require.Equal(t, 6, calls)
	require.Equal(t, 3, most)
	require.Equal(t, "proxy", p.Name)
	require.Equal(t, 6, p.Requests)
	require.Equal(t, 18, p.Tokens)
	require.Zero(t, p.Errors)
	require.InDelta(t, 0.001, p.TPOT, 1e-12)
	require.Greater(t, p.Wall, 0.0)
}
