package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// TestRegistryState summarizes a hand-made registry: LEFT entries and
// entries without a model are left out; only SERVING ones count for
// coverage; headroom sums free/capacity per block (by hand: block 0 is
// hosted by a (1/4 free) and b (all free), block 1 by b, block 2 by the
// DOWN c only: uncovered); models and servers are sorted.
func TestRegistryState(t *testing.T) {
	now := time.Unix(1000, 0)
	entry := func(id string, st swarm.LifecycleState, model string, sp swarm.Span, free, capacity int64, age time.Duration) registry.Entry {
		return registry.Entry{NodeID: id, State: st, Heartbeat: now.Add(-age), Info: swarm.ServerInfo{
			Model: model, ModelBlocks: 3, Span: sp, CacheBytesFree: free, CacheBytesCapacity: capacity, Tau: 0.5,
			Endpoints: []string{"ws://" + id}, Version: "v1", StartedAt: 900, TokensServed: 7, Device: "cpu",
		}}
	}
	st := RegistryState([]registry.Entry{
		entry("b", swarm.StateServing, "m1", span(0, 2), 100, 100, time.Second),
		entry("a", swarm.StateServing, "m1", span(0, 1), 25, 100, 2*time.Second),
		entry("c", swarm.StateDown, "m1", span(2, 3), 100, 100, 0),
		entry("d", swarm.StateLeft, "m1", span(0, 3), 100, 100, 0),
		entry("e", swarm.StateJoin, "", span(0, 0), 0, 0, 0),
		entry("f", swarm.StateServing, "m0", span(0, 3), 0, 0, 0),
	}, now)
	require.Len(t, st.Models, 2)
	require.Equal(t, "m0", st.Models[0].Name)
	require.Equal(t, []int{1, 1, 1}, st.Models[0].Coverage)
	require.Equal(t, []float64{0, 0, 0}, st.Models[0].Headroom, "no capacity advertised")
	m := st.Models[1]
	require.Equal(t, "m1", m.Name)
	require.Equal(t, 3, m.Blocks)
	require.Equal(t, []int{2, 1, 0}, m.Coverage)
	require.InDeltaSlice(t, []float64{1.25, 1, 0}, m.Headroom, 1e-12)
	require.Equal(t, "unavailable", m.Health)
	require.Equal(t, []string{"2:3"}, m.Uncovered)
	require.Len(t, m.Servers, 3)
	want := []struct {
		id, state string
		age       float64
	}{{"a", "serving", 2}, {"b", "serving", 1}, {"c", "down", 0}}
	for i, w := range want {
		s := m.Servers[i]
		require.Equal(t, w.id, s.ID)
		require.Equal(t, w.state, s.State)
		require.Equal(t, w.age, s.HeartbeatAge)
		require.Equal(t, "ws://"+w.id, s.Endpoint)
		require.Equal(t, "v1", s.Version)
		require.Equal(t, int64(900), s.StartedAt)
		require.Equal(t, int64(7), s.TokensServed)
	}
	require.Equal(t, 1/(0.5*2), m.Servers[1].Throughput, "1 / (tau m_j), m_j = 2")
}

// TestNewPlanState shows each move with its server's last report, or
// "waiting".
func TestNewPlanState(t *testing.T) {
	ps := NewPlanState(planner.Plan{Epoch: 3, Status: planner.StatusActive, Moves: []planner.Move{
		{Server: "a", From: span(0, 2), To: span(2, 4), Step: 0},
		{Server: "b", From: span(2, 4), To: span(0, 2), Step: 1},
	}, Progress: map[string]planner.Progress{"a": {State: planner.MoveDone}}})
	require.Equal(t, &ingress.PlanState{Epoch: 3, Status: "active", Moves: []ingress.PlanMove{
		{Server: "a", Step: 0, From: span(0, 2), To: span(2, 4), Progress: "move 0 done"},
		{Server: "b", Step: 1, From: span(2, 4), To: span(0, 2), Progress: "waiting"},
	}}, ps)
}
