package convergence

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile_NearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 95, 5 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 100, 5 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(7), 95, 7 * time.Millisecond},
		{nil, 50, 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, percentile(tt.in, tt.q), "%v q=%v", tt.in, tt.q)
	}
	// 20 values 1..20 ms: p95 is the 19th.
	var twenty []int
	for i := 20; i >= 1; i-- {
		twenty = append(twenty, i)
	}
	require.Equal(t, 19*time.Millisecond, percentile(ms(twenty...), 95))
}

func TestParamsValidate(t *testing.T) {
	require.NoError(t, DefaultParams().Validate())
	for name, mod := range map[string]func(*Params){
		"one node":     func(p *Params) { p.Nodes = 1 },
		"no trials":    func(p *Params) { p.Trials = 0 },
		"too many":     func(p *Params) { p.Trials = p.Nodes },
		"transport":    func(p *Params) { p.Transport = "udp" },
		"timeout":      func(p *Params) { p.Timeout = 0 },
		"registry cfg": func(p *Params) { p.Registry.HeartbeatInterval = 0 },
	} {
		p := DefaultParams()
		mod(&p)
		require.ErrorIs(t, p.Validate(), ErrBadParams, name)
	}
}

// TestMeasure_SmallSwarm runs the real measurement on 4 loopback nodes.
func TestMeasure_SmallSwarm(t *testing.T) {
	p := DefaultParams()
	p.Nodes, p.Trials = 4, 2
	p.Timeout, p.SetupTimeout, p.Settle = 30*time.Second, time.Minute, 0
	res, err := Measure(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 4, res.Nodes)
	require.Len(t, res.Trials, 2)
	require.Zero(t, res.Missing)
	for _, tr := range res.Trials {
		require.Positive(t, tr.P50)
		require.LessOrEqual(t, tr.P50, tr.P95)
		require.LessOrEqual(t, tr.P95, tr.P100)
		require.Less(t, tr.P100, p.Timeout)
	}
}

// BenchmarkConvergence8 reports the spread of one write through 8 loopback
// nodes; `swarm registry bench --nodes 16,32,64` measures larger swarms.
func BenchmarkConvergence8(b *testing.B) {
	p := DefaultParams()
	p.Nodes, p.Trials = 8, 7
	var p50, p95, p100 time.Duration
	for b.Loop() {
		res, err := Measure(b.Context(), p)
		if err != nil {
			b.Fatal(err)
		}
		p50, p95, p100 = res.P50, res.P95, res.P100
	}
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(p100.Microseconds())/1000, "p100-ms")
}
