package placement_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// twoServers is L = 4, s_m = 100, s_c = 10, R = 1: each server holds 2 blocks.
func twoServers() placement.Input {
	return placement.Input{
		Model:    placement.Model{Blocks: 4, BlockBytes: 100, CacheBytes: 10},
		Clients:  []string{"c0"},
		Sessions: 1,
		Servers: []placement.Server{
			{Name: "a", MemoryBytes: 220, Tau: 0.01, RTT: []float64{0.05}},
			{Name: "b", MemoryBytes: 220, Tau: 0.02, RTT: []float64{0.05}},
		},
	}
}

func TestReplanBadInput(t *testing.T) {
	in := twoServers()
	ok := []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}}
	for _, tt := range []struct {
		name    string
		current []swarm.Span
		alive   []bool
		opt     placement.ReplanOptions
		want    string
	}{
		{"spans count", ok[:1], nil, placement.ReplanOptions{}, "1 current spans, want one per server (2)"},
		{"alive count", ok, []bool{true}, placement.ReplanOptions{}, "alive has 1 entries, want one per server (2) or nil"},
		{"negative gain", ok, nil, placement.ReplanOptions{MinGain: -0.1}, "min gain -0.1, want a fraction in [0, 1)"},
		{"gain 1", ok, nil, placement.ReplanOptions{MinGain: 1}, "min gain 1, want a fraction in [0, 1)"},
		{"hold", ok, nil, placement.ReplanOptions{HoldSessions: -1}, "hold sessions -1, want >= 0"},
		{"span past L", []swarm.Span{{Start: 2, End: 5}, {}}, nil, placement.ReplanOptions{}, "current[0] (a)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := placement.Replan(in, tt.current, tt.alive, tt.opt)
			require.ErrorIs(t, err, placement.ErrBadInput)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := placement.Replan(in, ok, []bool{false, false}, placement.ReplanOptions{})
	require.ErrorIs(t, err, placement.ErrInfeasible, "no alive server")
	_, err = placement.Replan(in, ok, []bool{true, false}, placement.ReplanOptions{})
	require.ErrorIs(t, err, placement.ErrInfeasible, "one 2-block server cannot cover 4 blocks (eq. 18)")
}

func TestSelfReplanBadInput(t *testing.T) {
	in := twoServers()
	cur := []swarm.Span{{Start: 0, End: 2}, {}}
	_, err := placement.SelfReplan(in, cur, nil, placement.ReplanOptions{}, 2, nil)
	require.ErrorIs(t, err, placement.ErrBadInput)
	require.ErrorContains(t, err, "me = 2, want a server index in [0, 2)")
	_, err = placement.SelfReplan(in, cur, nil, placement.ReplanOptions{}, 1, []placement.Intent{{Server: -1}})
	require.ErrorIs(t, err, placement.ErrBadInput)
	require.ErrorContains(t, err, "intents[0].server = -1")
	// b joins (empty span): its own intent does not stop it.
	s, err := placement.SelfReplan(in, cur, nil, placement.ReplanOptions{}, 1,
		[]placement.Intent{{Server: 1, Blocks: swarm.Span{Start: 2, End: 4}}})
	require.NoError(t, err)
	require.True(t, s.Now, s.Why)
	require.Equal(t, placement.ReasonUncovered, s.Plan.Reason)
	require.Equal(t, swarm.Span{Start: 2, End: 4}, s.Move.To)
	// a's intent over blocks b does not change (0:2 is kept by a) is no conflict.
	s, err = placement.SelfReplan(in, cur, nil, placement.ReplanOptions{}, 1,
		[]placement.Intent{{Server: 0, Blocks: swarm.Span{Start: 0, End: 2}}})
	require.NoError(t, err)
	require.True(t, s.Now, s.Why)
}

func TestMigrateBadInput(t *testing.T) {
	in := twoServers()
	ok := []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}}
	_, _, _, err := placement.Migrate(in, ok, ok[:1], placement.ReplanOptions{})
	require.ErrorIs(t, err, placement.ErrBadInput)
	require.ErrorContains(t, err, "1 target spans, want one per server (2)")
	_, _, _, err = placement.Migrate(in, []swarm.Span{{Start: 3, End: 1}, {}}, ok, placement.ReplanOptions{})
	require.ErrorIs(t, err, placement.ErrBadInput)
	require.ErrorContains(t, err, "current[0] (a)")
	_, _, _, err = placement.Migrate(in, ok, ok, placement.ReplanOptions{HoldSessions: -1})
	require.ErrorIs(t, err, placement.ErrBadInput)
	steps, blocked, final, err := placement.Migrate(in, ok, ok, placement.ReplanOptions{})
	require.NoError(t, err)
	require.Empty(t, steps)
	require.Empty(t, blocked)
	require.Equal(t, ok, final)
}

func TestReasonAndKindNames(t *testing.T) {
	for r, want := range map[placement.Reason]string{
		placement.ReasonAtTarget: "at-target", placement.ReasonUncovered: "uncovered",
		placement.ReasonBelowCapacity: "below-capacity", placement.ReasonGain: "gain",
		placement.ReasonSmallGain: "small-gain", placement.ReasonBlocked: "blocked", 0: "reason(0)",
	} {
		require.Equal(t, want, r.String())
	}
	require.Equal(t, "hold", placement.MoveHold.String())
	require.Equal(t, "drain", placement.MoveDrain.String())
}
