package node_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// TestBlockCoverage checks the counts and the uncovered blocks `swarm status`
// prints: only SERVING servers count, L is the largest advertised.
func TestBlockCoverage(t *testing.T) {
	e := func(model string, start, end, l int, st swarm.LifecycleState) registry.Entry {
		return registry.Entry{State: st, Info: swarm.ServerInfo{Model: model, Span: swarm.Span{Start: start, End: end}, ModelBlocks: l}}
	}
	got := node.BlockCoverage([]registry.Entry{
		e("m", 0, 2, 5, swarm.StateServing),
		e("m", 1, 3, 0, swarm.StateServing),
		e("m", 0, 5, 5, swarm.StateSuspected),
		e("m", 4, 5, 5, swarm.StateJoin),
		e("a", 0, 2, 0, swarm.StateServing),
		e("", 0, 0, 0, swarm.StateServing),
	})
	require.Len(t, got, 2)
	require.Equal(t, "a  blocks 0..1: 1 1", got[0].String())
	require.Equal(t, "m  blocks 0..4: 1 2 1 0 0  (no SERVING server for block 3, 4)", got[1].String())
}
