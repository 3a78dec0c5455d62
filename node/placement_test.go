package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// memoryFor returns M such that CG-BP line 1 gives m blocks for R = 1 and
// max length 512 on stories260K: m (s_m + s_c) with s_m = 181760 and
// s_c = 512 tokens * 256 bytes; the capacity (15) is then f_j = 1.
func memoryFor(m int) int64 { return int64(m) * (181760 + 512*256) }

// entry is a registry entry of a stories260K server.
func entry(id string, inc uint64, st swarm.LifecycleState, s swarm.Span, blocks int, tentative bool) registry.Entry {
	return registry.Entry{NodeID: id, Incarnation: inc, State: st, Announced: st, Info: swarm.ServerInfo{
		ID: id, Model: "stories260K", ModelBlocks: 5, Span: s, MemoryBytes: memoryFor(blocks), Tau: 0.001,
		ClientRTT: 0.0002, Tentative: tentative,
	}}
}

// TestChooseSpan_Sequential replays servers of 2 blocks each (capacity
// f_j = 1 session) joining one after another; the expected spans follow
// Alg. 1 lines 4-7 by hand: with every block under-served (C_b < R = 1)
// the window holding the most unserved demand wins, ties to the smallest
// start; once all blocks are served, the window whose sorted counts
// (C_a, C_a+1) are lexicographically smallest wins.
func TestChooseSpan_Sequential(t *testing.T) {
	p := PlacementParams{Model: stories(), Sessions: 1, MaxLength: 512}
	self := entry("self", Unpublished, swarm.StateJoin, swarm.Span{}, 2, true)
	serving := func(id string, s swarm.Span) registry.Entry { return entry(id, 1, swarm.StateServing, s, 2, false) }
	tests := []struct {
		name  string
		fleet []registry.Entry
		want  swarm.Span
	}{
		{"first of the swarm", nil, span(0, 2)},
		// Unserved demand: [1,3) 1, [2,4) 2, [3,5) 2: smallest start.
		{"second", []registry.Entry{serving("a", span(0, 2))}, span(2, 4)},
		// Only windows holding block 4 qualify: [3,5).
		{"third", []registry.Entry{serving("a", span(0, 2)), serving("b", span(2, 4))}, span(3, 5)},
		// C = 1 1 1 2 1: sorted windows (1,1) (1,1) (1,2) (1,2): [0,2).
		{"fourth", []registry.Entry{serving("a", span(0, 2)), serving("b", span(2, 4)), serving("c", span(3, 5))}, span(0, 2)},
		// C = 2 2 1 2 1: (2,2) (1,2) (1,2) (1,2): [1,3).
		{"fifth", []registry.Entry{serving("a", span(0, 2)), serving("b", span(2, 4)), serving("c", span(3, 5)), serving("d", span(0, 2))}, span(1, 3)},
		// A server that loads its final span (JOIN, not tentative) counts.
		{"loading server counts", []registry.Entry{entry("a", 1, swarm.StateJoin, span(0, 2), 2, false)}, span(2, 4)},
		// SUSPECTED, DOWN and LEFT servers, other models and full-range
		// replicas do not: their blocks are free.
		{"dead and foreign servers ignored", []registry.Entry{
			serving("a", span(0, 2)),
			entry("b", 1, swarm.StateSuspected, span(2, 4), 2, false),
			entry("c", 1, swarm.StateDown, span(2, 4), 2, false),
			entry("d", 1, swarm.StateLeft, span(2, 4), 2, false),
			func() registry.Entry { e := serving("e", span(2, 4)); e.Info.Model = "other"; return e }(),
			func() registry.Entry { e := serving("f", span(2, 4)); e.Info.ModelBlocks = 6; return e }(),
			func() registry.Entry { e := serving("g", span(0, 5)); e.Info.FullRange = true; return e }(),
		}, span(2, 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChooseSpan(tt.fleet, self, p)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestChooseSpan_MixedSizes places servers of 3, then 1, 1 and 2 blocks.
func TestChooseSpan_MixedSizes(t *testing.T) {
	p := PlacementParams{Model: stories(), Sessions: 1, MaxLength: 512}
	var fleet []registry.Entry
	for i, c := range []struct {
		blocks int
		want   swarm.Span
	}{
		{3, span(0, 3)}, // the window with the most unserved demand
		{1, span(3, 4)}, // blocks 3 and 4 tie: smallest start
		{1, span(4, 5)},
		{2, span(0, 2)}, // C = 1 1 1 1 1: every window (1,1), smallest start
	} {
		self := entry(string(rune('a'+i)), Unpublished, swarm.StateJoin, swarm.Span{}, c.blocks, true)
		got, err := ChooseSpan(fleet, self, p)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "server %d of %d blocks", i, c.blocks)
		fleet = append(fleet, entry(self.NodeID, 1, swarm.StateServing, got, c.blocks, false))
	}
}

// TestChooseSpan_Concurrent has servers that announced JOIN at the same
// moment with the same tentative span: each places the earlier joiners
// first (by incarnation, then peer id) and so takes a different span, the
// spans of sequential joins.
func TestChooseSpan_Concurrent(t *testing.T) {
	p := PlacementParams{Model: stories(), Sessions: 1, MaxLength: 512}
	joining := []registry.Entry{
		entry("p1", 100, swarm.StateJoin, span(0, 2), 2, true),
		entry("p2", 200, swarm.StateJoin, span(0, 2), 2, true),
		entry("p3", 200, swarm.StateJoin, span(0, 2), 2, true), // same incarnation: p2 < p3
		entry("p4", 300, swarm.StateJoin, span(0, 2), 2, true),
	}
	want := map[string]swarm.Span{"p1": span(0, 2), "p2": span(2, 4), "p3": span(3, 5), "p4": span(0, 2)}
	for _, self := range joining {
		got, err := ChooseSpan(joining, self, p)
		require.NoError(t, err)
		require.Equal(t, want[self.NodeID], got, self.NodeID)
	}
	require.Equal(t, []string{"p1", "p2"}, EarlierJoiners(joining, joining[2], p))
	require.Empty(t, EarlierJoiners(joining, joining[0], p))

	// Once p1 settled (final span announced), the others take it as fixed,
	// even if it is not the one they predicted for it.
	settled := append([]registry.Entry{entry("p1", 100, swarm.StateJoin, span(3, 5), 2, false)}, joining[1:]...)
	got, err := ChooseSpan(settled, joining[1], p)
	require.NoError(t, err)
	require.Equal(t, span(0, 2), got)
	require.Empty(t, EarlierJoiners(settled, joining[1], p))

	// Before its own JOIN is published, a server comes after every joiner.
	got, err = ChooseSpan(joining, entry("new", Unpublished, swarm.StateJoin, swarm.Span{}, 2, true), p)
	require.NoError(t, err)
	require.Equal(t, span(1, 3), got, "after p1..p4 = 0:2 2:4 3:5 0:2")
}

func TestChooseSpan_Errors(t *testing.T) {
	p := PlacementParams{Model: stories(), Sessions: 1, MaxLength: 512}
	small := entry("s", Unpublished, swarm.StateJoin, swarm.Span{}, 0, true)
	small.Info.MemoryBytes = 181760 + 512*256 - 1 // one block and not quite one cache
	_, err := ChooseSpan(nil, small, p)
	require.ErrorIs(t, err, ErrPlacement)
	require.ErrorContains(t, err, "cannot hold one block")

	bad := p
	bad.Sessions = 0
	_, err = ChooseSpan(nil, entry("s", Unpublished, swarm.StateJoin, swarm.Span{}, 2, true), bad)
	require.ErrorIs(t, err, ErrBadConfig)
	require.ErrorContains(t, err, "--target-sessions 0")

	neg := entry("s", Unpublished, swarm.StateJoin, swarm.Span{}, 2, true)
	neg.Info.Tau = -1
	_, err = ChooseSpan(nil, neg, p)
	require.ErrorIs(t, err, ErrBadConfig)

	// A peer advertising nonsense is left out, not fatal.
	liar := entry("liar", 1, swarm.StateServing, span(0, 2), 2, false)
	liar.Info.Tau = -5
	got, err := ChooseSpan([]registry.Entry{liar}, entry("s", Unpublished, swarm.StateJoin, swarm.Span{}, 2, true), p)
	require.NoError(t, err)
	require.Equal(t, span(0, 2), got)
}

// TestChooseSpan_SlidingBlocks gives the first server of a swarm
// 3*s_m + 196608 bytes for R = 1 and max length 512. With a 64-token
// sliding window on blocks 0-3 (pattern 5: block 4 global) those blocks
// hold 64 + swarm.SlidingRewind = 128 positions (32768 bytes), so any 3
// blocks need at most 131072 + 2*32768 = 196608 cache bytes: it takes
// 3 blocks. With one s_c for every block (no window) the same memory
// holds floor(741888 / (181760 + 131072)) = 2.
func TestChooseSpan_SlidingBlocks(t *testing.T) {
	require.Equal(t, 64, swarm.SlidingRewind, "the figures above")
	self := entry("self", Unpublished, swarm.StateJoin, swarm.Span{}, 0, true)
	self.Info.MemoryBytes = 3*181760 + 196608
	gemma := stories()
	gemma.SlidingWindow, gemma.SlidingPattern = 64, 5
	got, err := ChooseSpan(nil, self, PlacementParams{Model: gemma, Sessions: 1, MaxLength: 512})
	require.NoError(t, err)
	require.Equal(t, span(0, 3), got)
	got, err = ChooseSpan(nil, self, PlacementParams{Model: stories(), Sessions: 1, MaxLength: 512})
	require.NoError(t, err)
	require.Equal(t, span(0, 2), got)
}
