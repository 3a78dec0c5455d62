package crdt

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/swarmllm/swarm/swarm"
)

var testTiming = Timing{SuspectAfterMs: 3000, LeftAfterMs: 30000, RetentionMs: 60000, MaxClockSkewMs: 1000}

func TestLiveness(t *testing.T) {
	serving := Entry{NodeID: "a", Incarnation: 1, State: swarm.StateServing, Version: 1, HeartbeatMs: 10000}
	down := serving
	down.State = swarm.StateDown
	left := serving
	left.State = swarm.StateLeft
	tests := []struct {
		name    string
		e       Entry
		now     int64
		heard   int64
		want    swarm.LifecycleState
		comment string
	}{
		{"fresh", serving, 10500, 10100, swarm.StateServing, ""},
		{"silent locally, at the bound", serving, 13100, 10100, swarm.StateServing, "3000 ms is not more than 3000"},
		{"silent locally", serving, 13101, 10100, swarm.StateSuspected, ""},
		{"stale on arrival, within skew", serving, 13900, 13800, swarm.StateServing, "owner silence 3900 <= 3000+1000"},
		{"stale on arrival", serving, 14001, 14000, swarm.StateSuspected, "late joiner: owner silence 4001 > 4000"},
		{"down is shown while fresh", down, 10500, 10100, swarm.StateDown, ""},
		{"down and silent", down, 14001, 10000, swarm.StateSuspected, ""},
		{"left after the grace period", serving, 40001, 10000, swarm.StateLeft, ""},
		{"suspected just before", serving, 40000, 10000, swarm.StateSuspected, ""},
		{"announced left", left, 10000, 10000, swarm.StateLeft, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Liveness(tt.e, tt.now, tt.heard, testTiming), tt.comment)
		})
	}
}

func TestCollectableAndGC(t *testing.T) {
	silent := Entry{NodeID: "s", Incarnation: 1, State: swarm.StateServing, Version: 4, HeartbeatMs: 0}
	left := Entry{NodeID: "l", Incarnation: 1, State: swarm.StateLeft, Version: 5, HeartbeatMs: 0}
	alive := Entry{NodeID: "a", Incarnation: 1, State: swarm.StateServing, Version: 5, HeartbeatMs: 89000}

	require.False(t, Collectable(left, 60000, testTiming))
	require.True(t, Collectable(left, 60001, testTiming))
	require.False(t, Collectable(silent, 90000, testTiming), "silent: LEFT at 30 s, kept 60 s more")
	require.True(t, Collectable(silent, 90001, testTiming))

	m := NewMap()
	for _, e := range []Entry{silent, left, alive} {
		require.True(t, m.Merge(e))
	}
	require.Empty(t, GC(m, 60000, testTiming))
	require.Equal(t, []string{"l"}, GC(m, 60001, testTiming))
	require.Equal(t, []string{"s"}, GC(m, 90001, testTiming))
	require.Equal(t, 1, m.Len())
	_, ok := m.Get("a")
	require.True(t, ok)
}

func TestFromFuture(t *testing.T) {
	e := Entry{NodeID: "a", HeartbeatMs: 11000}
	require.False(t, FromFuture(e, 10000, testTiming))
	require.True(t, FromFuture(e, 9999, testTiming))
}
