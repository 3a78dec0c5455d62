package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
)

// modelEngine builds the proposed algorithm's engine on the tiny fleet with
// memory 250 (tinyFleet: A = [0,2), B = [2,4), floor((250-200)/5) = 10
// cache slots each, room for 5 sessions) under the given server model.
func modelEngine(t *testing.T, m ServerModel, growth float64) *engine {
	t.Helper()
	f := tinyFleet(250)
	f.ServerModel = m
	for j := range f.Servers {
		f.Servers[j].Hardware.TauBatch = AssumedBatchCurve(f.Servers[j].Hardware.Tau, growth)
	}
	a, err := LookupAlgorithm("proposed")
	require.NoError(t, err)
	plan, err := placement.CGBP(f.placementInput(tinyWork, 1, nil, &a))
	require.NoError(t, err)
	require.Equal(t, []int{10, 10}, plan.CacheSlots)
	e, err := newEngine(f, tinyWork, a, plan, nil)
	require.NoError(t, err)
	return e
}

// Two sessions arriving together share both servers for their whole decode.
// By hand (tinyFleet: t_cA = 0.3, t_cB = 0.5, k = 2 blocks on each,
// tau_A = 0.01, tau_B = 0.02; first token 1.54 s, l_max = 3):
//
//	independent: D = (0.3 + 2*0.01) + (0.5 + 2*0.02)             = 0.86 s, end 1.54 + 2*0.86 = 3.26
//	serial:      each server steps both: compute tau_j * (2 + 2)
//	             D = (0.3 + 4*0.01) + (0.5 + 4*0.02)             = 0.92 s, end 1.54 + 2*0.92 = 3.38
//	batched, tau(2) = 1.5 tau(1):
//	             D = (0.3 + 2*0.01*1.5) + (0.5 + 2*0.02*1.5)     = 0.89 s, end 1.54 + 2*0.89 = 3.32
//
// so serial > batched > independent, as the mechanism predicts.
func TestServerModelsTogether(t *testing.T) {
	for _, tt := range []struct {
		model    ServerModel
		decode   float64
		sessionT float64
	}{
		{ServerIndependent, 0.86, 3.26},
		{ServerSerial, 0.92, 3.38},
		{ServerBatched, 0.89, 3.32},
	} {
		t.Run(tt.model.String(), func(t *testing.T) {
			e := modelEngine(t, tt.model, 0.5)
			require.NoError(t, e.run([]float64{0, 0}))
			var res Result
			e.summarize(&res)
			for _, s := range e.sessions {
				require.True(t, s.done)
				require.Zero(t, s.start)
				require.InDelta(t, tt.sessionT, s.end, 1e-12)
			}
			require.InDelta(t, tt.decode, res.RemainingToken, 1e-12)
			require.InDelta(t, tinyFirst, res.FirstToken, 1e-12, "the first token is not slowed")
			require.InDelta(t, tt.sessionT/3, res.PerToken, 1e-12)
		})
	}
}

// Staggered sessions: session 0 arrives at 0, session 1 at 2. Serial, by
// hand: session 0 decodes alone from 1.54 at 0.86 s/token, so at t = 2 it
// has done 0.46/0.86 tokens and has 2 - 0.46/0.86 = 1.4651163 left; from
// then both run, 0.92 s/token (above), so it ends at 2 + 1.4651163*0.92
// = 3.3479070. Session 1 is still in its prefill (first token at 3.54),
// which the model does not slow, and then decodes alone: 3.54 + 2*0.86
// = 5.26.
func TestServerSerialStaggered(t *testing.T) {
	e := modelEngine(t, ServerSerial, 0)
	require.NoError(t, e.run([]float64{0, 2}))
	left := 2 - 0.46/0.86
	require.InDelta(t, 2+left*0.92, e.sessions[0].end, 1e-12)
	require.InDelta(t, 3.3479070, e.sessions[0].end, 1e-7)
	require.InDelta(t, 5.26, e.sessions[1].end, 1e-12)
	// Batched with no growth is independent.
	e = modelEngine(t, ServerBatched, 0)
	require.NoError(t, e.run([]float64{0, 2}))
	require.InDelta(t, tinySession, e.sessions[0].end, 1e-12)
	require.InDelta(t, 2+tinySession, e.sessions[1].end, 1e-12)
}

// A booked start whose caches are still held because ends moved later is
// postponed, never over-committed. Memory 214: one session at a time
// (tinyEngine). Independent: session 1 (arrival 1) starts at 3.26. Serial
// alone is independent (one session per server at a time), so the same.
func TestServerModelOneAtATime(t *testing.T) {
	e := tinyEngine(t, "proposed", func(f *Fleet) { f.ServerModel = ServerSerial })
	require.NoError(t, e.run([]float64{0, 1, 1.5}))
	require.InDelta(t, tinySession, e.sessions[1].start, 1e-12)
	require.InDelta(t, 3*tinySession, e.sessions[2].end, 1e-12)
}

// PETALS sessions that reserve more cache tokens fit fewer at once.
// tinyFleet with CacheTokens 20: PETALS gives each server
// floor(250 / (100 + 20)) = 2 blocks and 2*20 = 40 cache bytes per server;
// sessions of lI + l_max = 5 tokens take 5 bytes per block: 8 slots, four
// 2-block sessions at once; reserving 10 tokens: 4 slots, two sessions.
// Three sessions at t = 0: all start at once, or the third is rejected at
// 0, 1 and 3 s (back-off 1 s, 2 s) while the first two run until 3.26 s
// and starts at 7 s: 3 retries, 1 per session on average.
func TestPetalsSessionTokens(t *testing.T) {
	for _, tt := range []struct {
		tokens  int
		slots   int
		retries float64
	}{{0, 8, 0}, {10, 4, 1}} {
		f := tinyFleet(250)
		f.Petals.CacheTokens = 20
		f.Petals.SessionTokens = tt.tokens
		a, err := LookupAlgorithm("petals")
		require.NoError(t, err)
		plan, _, err := a.place(f.placementInput(tinyWork, 1, nil, &a))
		require.NoError(t, err)
		require.Equal(t, []int{tt.slots, tt.slots}, plan.CacheSlots)
		e, err := newEngine(f, tinyWork, a, plan, nil)
		require.NoError(t, err)
		require.NoError(t, e.run([]float64{0, 0, 0}))
		var res Result
		e.summarize(&res)
		require.InDelta(t, tt.retries, res.Retries, 1e-12)
	}
}

func TestParseModels(t *testing.T) {
	for i, n := range []string{"independent", "serial", "batched"} {
		m, err := ParseServerModel(n)
		require.NoError(t, err)
		require.Equal(t, ServerModel(i), m)
		require.Equal(t, n, m.String())
	}
	_, err := ParseServerModel("fifo")
	require.ErrorIs(t, err, ErrBadConfig)
	c, err := ParseLinkCost("eq4")
	require.NoError(t, err)
	require.Equal(t, LinkDecode, c)
	_, err = ParseLinkCost("eq5")
	require.ErrorIs(t, err, ErrBadConfig)
}
