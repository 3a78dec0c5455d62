package server_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// TestMetrics runs a wrong-model Open, then one session with a 3-token and
// a 1-token step, through a server reporting into a fresh registry: 1
// WrongModel error, 1 session granted and open, 4 token rows in batches
// summing 4 rows, 2 steps timed, and at least the 4 x 64 float32 hidden
// states each way in bytes (256 values x 4 bytes, headers aside).
func TestMetrics(t *testing.T) {
	srv := newServer(t, swarm.Span{Start: 0, End: 2}, nil)
	reg := prometheus.NewRegistry()
	m, err := server.NewMetrics(reg)
	require.NoError(t, err)
	srv.SetMetrics(m)
	_, err = server.NewMetrics(reg)
	require.Error(t, err, "the names are registered once")

	p := serve(t, srv).dial(t)
	p.send(&wire.Open{Model: "llama", Span: swarm.Span{Start: 0, End: 2}, MaxLength: 8, DType: swarm.DTypeF32})
	require.Equal(t, wire.CodeWrongModel, expect[*wire.Error](p).Code)
	sid := p.open(openMsg(swarm.Span{Start: 0, End: 2}, 8))
	for _, st := range []struct{ pos, n int }{{0, 3}, {3, 1}} {
		p.send(&wire.Step{SessionID: sid, Position: st.pos, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: st.n, DModel: 64, Data: hidden(st.n, st.pos)}})
		expect[*wire.Result](p)
	}

	families, err := reg.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	one := func(name string) *dto.Metric {
		f, ok := byName[name]
		require.True(t, ok, "%s not gathered", name)
		require.Len(t, f.GetMetric(), 1, name)
		return f.GetMetric()[0]
	}
	require.Equal(t, 1.0, one("swarm_server_sessions").GetGauge().GetValue())
	require.Equal(t, 0.0, one("swarm_server_step_queue").GetGauge().GetValue())
	require.Positive(t, one("swarm_server_cache_bytes_free").GetGauge().GetValue())
	require.Equal(t, 1.0, one("swarm_server_sessions_opened_total").GetCounter().GetValue())
	require.Equal(t, 4.0, one("swarm_server_tokens_total").GetCounter().GetValue())
	require.Equal(t, uint64(2), one("swarm_server_step_seconds").GetHistogram().GetSampleCount())
	require.Equal(t, 4.0, one("swarm_server_batch_rows").GetHistogram().GetSampleSum())
	require.Equal(t, one("swarm_server_batch_rows").GetHistogram().GetSampleCount(), one("swarm_server_batch_seconds").GetHistogram().GetSampleCount())
	errs := one("swarm_server_errors_total")
	require.Equal(t, "WrongModel", errs.GetLabel()[0].GetValue())
	require.Equal(t, 1.0, errs.GetCounter().GetValue())
	// A frame written is counted once its write returned, which may be
	// just after the client read it: gather until the last one shows.
	bytes := map[string]float64{}
	require.Eventually(t, func() bool {
		fams, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range fams {
			if f.GetName() == "swarm_server_bytes_total" {
				for _, mt := range f.GetMetric() {
					bytes[mt.GetLabel()[0].GetValue()] = mt.GetCounter().GetValue()
				}
			}
		}
		return bytes["out"] >= 4.0*64*4
	}, 10*time.Second, 5*time.Millisecond, "out: 4 rows of 64 float32 at least")
	require.GreaterOrEqual(t, bytes["in"], 4.0*64*4)
	require.Equal(t, int64(4), srv.Info().TokensServed)
	require.Equal(t, swarm.Version, srv.Info().Version)
}
