package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// TestLiveFleet: the live fleet file of hand-made entries, numbers by
// hand: s_m = (M - cache capacity) / m = (1000 - 600) / 2 = 200 (the
// largest over servers), s_c = 2 bytes per token x 50 tokens = 100; R = 4
// and l = 50 as the servers were placed; one client at each server's
// ClientRTT; spans kept; JOIN servers, replicas and other models left out.
func TestLiveFleet(t *testing.T) {
	info := func(model string, s swarm.Span, mem, capacity int64, rtt float64) swarm.ServerInfo {
		return swarm.ServerInfo{Model: model, ModelBlocks: 4, Span: s, MemoryBytes: mem, CacheBytesCapacity: capacity,
			CacheBytesPerToken: 2, Tau: 0.01, ClientRTT: rtt, PlacementSessions: 4, PlacementMaxLength: 50}
	}
	entries := []registry.Entry{
		{NodeID: "b", State: swarm.StateServing, Info: info("m", span(2, 4), 1000, 700, 0.02)}, // s_m 150
		{NodeID: "a", State: swarm.StateServing, Info: info("m", span(0, 2), 1000, 600, 0.01)}, // s_m 200
		{NodeID: "c", State: swarm.StateJoin, Info: info("m", span(0, 4), 1000, 200, 0.01)},
		{NodeID: "r", State: swarm.StateServing, Info: swarm.ServerInfo{Model: "m", FullRange: true, Span: span(0, 4), ModelBlocks: 4}},
	}
	ff, err := LiveFleet(entries, "", 0, 0)
	require.NoError(t, err)
	require.Equal(t, 4, ff.Model.Blocks)
	require.Equal(t, 200.0, *ff.Model.BlockBytes)
	require.Equal(t, 100.0, *ff.Model.CacheBytes)
	require.Nil(t, ff.Model.BlockCacheBytes)
	require.Equal(t, 4, *ff.TargetSessions)
	require.Equal(t, []string{FleetClient}, ff.Clients)
	require.Len(t, ff.Servers, 2)
	require.Equal(t, []string{"a", "b"}, []string{ff.Servers[0].Name, ff.Servers[1].Name})
	require.Equal(t, []string{"0:2", "2:4"}, []string{ff.Servers[0].Span, ff.Servers[1].Span})
	require.Equal(t, 0.02, ff.Servers[1].RTT[FleetClient])
	fl, err := ff.Fleet()
	require.NoError(t, err)
	require.Equal(t, []swarm.Span{span(0, 2), span(2, 4)}, fl.Spans)

	ff, err = LiveFleet(entries, "m", 8, 100)
	require.NoError(t, err)
	require.Equal(t, 8, *ff.TargetSessions, "flags override")
	require.Equal(t, 200.0, *ff.Model.CacheBytes)

	two := append(entries, registry.Entry{NodeID: "x", State: swarm.StateServing, Info: info("other", span(0, 4), 1000, 200, 0)})
	_, err = LiveFleet(two, "", 0, 0)
	require.ErrorContains(t, err, "the registry serves 2 models ([m other]): name one with --model")
	_, err = LiveFleet(two, "nope", 0, 0)
	require.ErrorContains(t, err, `no SERVING block server of model "nope"`)
	fixed := []registry.Entry{{NodeID: "a", State: swarm.StateServing, Info: swarm.ServerInfo{Model: "m", ModelBlocks: 4, Span: span(0, 4), MemoryBytes: 10, CacheBytesCapacity: 5, CacheBytesPerToken: 1}}}
	_, err = LiveFleet(fixed, "", 0, 0)
	require.ErrorContains(t, err, "give --target-sessions and --max-length")
}

// TestStatusTableShowsMoves: a moving server's state names its target, a
// draining one the span it is leaving.
func TestStatusTableShowsMoves(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteStatusTable(&b, []registry.Entry{
		{NodeID: "a", State: swarm.StateServing, Info: swarm.ServerInfo{Model: "m", Span: span(0, 3), MovingTo: span(2, 5)}},
		{NodeID: "b", State: swarm.StateJoin, Info: swarm.ServerInfo{Model: "m", Span: span(3, 5), Draining: span(0, 2)}},
	}))
	require.Contains(t, b.String(), "SERVING (moving to 2:5)")
	require.Contains(t, b.String(), "JOIN (draining 0:2)")
}

// TestStatusTableHumanSizes: memory and free cache in binary units, the
// public name and the reachability verdict in their columns.
func TestStatusTableHumanSizes(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteStatusTable(&b, []registry.Entry{
		{NodeID: "a", State: swarm.StateServing, Info: swarm.ServerInfo{Model: "m", Span: span(0, 3), PublicName: "alice-4090",
			MemoryBytes: 8 << 30, CacheBytesFree: 1536, Reachability: "relayed"}},
	}))
	lines := strings.Split(b.String(), "\n")
	require.Regexp(t, `^NODE +PROVIDER +NAME +MODEL +SPAN +STATE +TAU +SESSIONS +MEMORY +CACHE FREE +REACH +HEARTBEAT AGE$`, lines[0])
	require.Regexp(t, `^a +- +alice-4090 +m +0:3 +SERVING +0s +0 +8\.0 GiB +1\.5 KiB +relayed +`, lines[1])
}
