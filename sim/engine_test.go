package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// tinyFleet is a hand-computable fleet: L = 4 blocks of s_m = 100 bytes,
// 1 cache byte per block per token, sessions of lI = 2 and l_max = 3 tokens
// (s_c = 5 bytes). Servers A and B can hold 2 blocks each (memory 250 for
// R = 1: floor(250/105) = 2), so every placement is A = [0,2), B = [2,4).
//
//	A: tau 0.01 s, tauI(lI) = 0.05 + 0.01 lI = 0.07 s, client RTT 0.2 s
//	B: tau 0.02 s, tauI(lI) = 0.10 s,                 client RTT 0.4 s
//	overheads: 0.1 s per token, 0.3 s per input
func tinyFleet(memory int64) *Fleet {
	f := &Fleet{
		Model: ModelSpec{Name: "tiny", Blocks: 4, BlockBytes: 100, CacheBytesPerToken: 1},
		Servers: []Server{
			{Name: "A", Hardware: Hardware{Kind: "fast", Tau: 0.01, TauI: swarm.PrefillFit{Intercept: 0.05, Slope: 0.01}, MemoryBytes: memory, ForwardRPS: 100, NetworkRPS: 100}},
			{Name: "B", Hardware: Hardware{Kind: "slow", Tau: 0.02, TauI: swarm.PrefillFit{Intercept: 0.10}, MemoryBytes: memory, ForwardRPS: 50, NetworkRPS: 100}},
		},
		ClientRTT: []float64{0.2, 0.4},
		ServerRTT: [][]float64{{0, 0.3}, {0.3, 0}},
		Overheads: Overheads{PerToken: 0.1, Prefill: swarm.PrefillFit{Intercept: 0.3}},
		Petals:    DefaultPetalsConfig(),
	}
	f.Petals.CacheTokens = 5 // PETALS reserves one s_c per block: same block counts
	f.Petals.ReservedBytes = 0
	return f
}

var tinyWork = Workload{Rate: 1, Requests: 1, InputTokens: 2, OutputTokens: 3}

// Eq. (1) by hand for the chain A [0,2) -> B [2,4), k_A = k_B = 2:
//
//	first token  F = (tI_cA + 2 tauI_A) + (tI_cB + 2 tauI_B)
//	               = (0.2+0.3 + 2*0.07) + (0.4+0.3 + 2*0.10) = 0.64 + 0.90 = 1.54 s
//	later tokens D = (t_cA + 2 tau_A) + (t_cB + 2 tau_B)
//	               = (0.2+0.1 + 2*0.01) + (0.4+0.1 + 2*0.02) = 0.32 + 0.54 = 0.86 s
//	session        F + (l_max - 1) D = 1.54 + 2*0.86 = 3.26 s, per token 3.26/3
const (
	tinyFirst   = 1.54
	tinyDecode  = 0.86
	tinySession = 3.26
)

func TestEq1_TinyScenario(t *testing.T) {
	for _, a := range Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			res, err := Run(tinyFleet(250), tinyWork, []Algorithm{a}, rand.New(rand.NewPCG(1, 2)), nil)
			require.NoError(t, err)
			require.Len(t, res, 1)
			r := res[0]
			require.Empty(t, r.Errors)
			require.Equal(t, 1, r.Runs)
			require.InDelta(t, tinySession/3, r.PerToken, 1e-12)
			require.InDelta(t, tinyFirst, r.FirstToken, 1e-12)
			require.InDelta(t, tinyDecode, r.RemainingToken, 1e-12)
			require.Zero(t, r.Waiting)
			require.Equal(t, 2.0, r.Hops)
			require.Equal(t, map[string]float64{"fast": 2, "slow": 2}, r.Blocks)
		})
	}
}

func TestSessionTimeTiny(t *testing.T) {
	got, err := SessionTime(tinyFleet(250), tinyWork)
	require.NoError(t, err)
	require.InDelta(t, tinySession, got, 1e-12)
}

// tinyEngine builds an engine for the tiny fleet with memory 214: each
// server holds 2 blocks and floor((214 - 200)/5) = 2 caches, one session.
func tinyEngine(t *testing.T, alg string, mutate func(*Fleet)) *engine {
	t.Helper()
	f := tinyFleet(214)
	if mutate != nil {
		mutate(f)
	}
	a, err := LookupAlgorithm(alg)
	require.NoError(t, err)
	in := f.placementInput(tinyWork, 1, nil, nil)
	plan, _, err := a.place(in)
	require.NoError(t, err)
	require.Equal(t, []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}}, plan.Spans)
	require.Equal(t, []int{2, 2}, plan.CacheSlots)
	e, err := newEngine(f, tinyWork, a, plan, nil)
	require.NoError(t, err)
	return e
}

func TestAdmitWaitStartsWhenCachesFree(t *testing.T) {
	e := tinyEngine(t, "proposed", nil)
	require.NoError(t, e.run([]float64{0, 1, 1.5}))
	s := e.sessions
	// Session 0 runs 0 .. 3.26. Session 1 arrives at 1; both servers are
	// full until 3.26 (eq. 20), so it starts then and ends at 6.52.
	// Session 2 arrives at 1.5 and starts when session 1 ends.
	require.Zero(t, s[0].start)
	require.InDelta(t, tinySession, s[1].start, 1e-12)
	require.InDelta(t, 2*tinySession, s[2].start, 1e-12)
	require.InDelta(t, 3*tinySession, s[2].end, 1e-12)
	require.Equal(t, s[0].end, s[1].start, "starts exactly at the completion that frees the caches")
	require.Equal(t, s[1].end, s[2].start)
	require.Equal(t, 3, e.maxConc)
	for _, x := range s {
		require.True(t, x.done)
		require.Zero(t, x.retries)
	}
}

func TestAdmitRetryBacksOff(t *testing.T) {
	for _, tt := range []struct {
		name       string
		maxBackoff float64
		// Session 1 arrives at 1 while session 0 holds the caches until
		// 3.26; it retries after 1 s, then 2 s (or the cap), ...
		wantStart   float64
		wantRetries int
	}{
		{"doubling", 60, 4, 2},             // attempts at 1, 2, 4
		{"capped", 1.5, 3.5, 2},            // attempts at 1, 2, 3.5
		{"cap at min", 1, 4, 3},            // attempts at 1, 2, 3, 4
		{"long cap", 0.75, 3.25 + 0.75, 4}, // 1, 1.75, 2.5, 3.25, 4.0
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := tinyEngine(t, "petals", func(f *Fleet) {
				f.Petals.MaxBackoff = tt.maxBackoff
				f.Petals.MinBackoff = min(1, tt.maxBackoff)
			})
			require.NoError(t, e.run([]float64{0, 1}))
			s := e.sessions[1]
			require.InDelta(t, tt.wantStart, s.start, 1e-12)
			require.Equal(t, tt.wantRetries, s.retries)
			require.InDelta(t, tt.wantStart+tinySession, s.end, 1e-12)
		})
	}
}

func TestEventOrderFreesBeforeReuse(t *testing.T) {
	// Session 1 arrives exactly when session 0 ends: the completion is
	// processed first, so it starts at once in both admission modes.
	for _, alg := range []string{"proposed", "petals"} {
		e := tinyEngine(t, alg, nil)
		require.NoError(t, e.run([]float64{0}))
		end := e.sessions[0].end
		require.InDelta(t, tinySession, end, 1e-12)

		e = tinyEngine(t, alg, nil)
		require.NoError(t, e.run([]float64{0, end}))
		require.Equal(t, end, e.sessions[1].start, alg)
		require.Zero(t, e.sessions[1].retries, alg)
		require.Equal(t, 1, e.maxConc, alg)
	}
}

func TestRunIsDeterministic(t *testing.T) {
	f, err := Clustered(0)
	require.NoError(t, err)
	w := Workload{Rate: 0.5, Requests: 60, InputTokens: 20, OutputTokens: 128}
	a, err := Run(f, w, Algorithms(), rand.New(rand.NewPCG(7, 1)), nil)
	require.NoError(t, err)
	b, err := Run(f, w, Algorithms(), rand.New(rand.NewPCG(7, 1)), nil)
	require.NoError(t, err)
	require.Equal(t, a, b)
	c, err := Run(f, w, Algorithms(), rand.New(rand.NewPCG(7, 2)), nil)
	require.NoError(t, err)
	require.NotEqual(t, a[1].PerToken, c[1].PerToken, "another seed gives another PETALS join order and arrivals")
}

// TestLoadedRunsKeepInvariants runs every algorithm under a load that
// makes sessions wait; engine.start fails the run if memory were ever
// over-committed or a route broke Lemma 3.1, so no run may report an error.
func TestLoadedRunsKeepInvariants(t *testing.T) {
	for cc := range 3 {
		f, err := Clustered(cc)
		require.NoError(t, err)
		w := Workload{Rate: 1, Requests: 80, InputTokens: 20, OutputTokens: 128}
		res, err := Run(f, w, Algorithms(), rand.New(rand.NewPCG(3, uint64(cc))), nil)
		require.NoError(t, err)
		for _, r := range res {
			require.Empty(t, r.Errors, r.Algorithm)
			require.Equal(t, 1, r.Runs)
			// per session: completion = wait + F + (l-1) D, averaged.
			require.InDelta(t, r.PerToken*128, r.FirstToken+127*r.RemainingToken, 1e-6, r.Algorithm)
			require.GreaterOrEqual(t, r.FirstToken, r.Waiting)
		}
		require.Greater(t, res[1].Waiting, 0.0, "petals waits at 1 session/s")
	}
}

func TestPoissonArrivals(t *testing.T) {
	const n, rate = 20000, 0.5
	a := Arrivals(rand.New(rand.NewPCG(1, 1)), rate, n)
	require.Len(t, a, n)
	for i := 1; i < n; i++ {
		require.Greater(t, a[i], a[i-1])
	}
	// mean inter-arrival 1/rate = 2 s; std of the mean 2/sqrt(n) = 0.014 s.
	require.InDelta(t, 1/rate, a[n-1]/n, 0.06)
}

func TestRejectsBadConfig(t *testing.T) {
	f := tinyFleet(250)
	for _, tt := range []struct {
		name string
		edit func(*Fleet, *Workload)
		want string
	}{
		{"rate", func(_ *Fleet, w *Workload) { w.Rate = 0 }, "arrival rate"},
		{"requests", func(_ *Fleet, w *Workload) { w.Requests = 0 }, "requests"},
		{"output", func(_ *Fleet, w *Workload) { w.OutputTokens = 0 }, "output tokens"},
		{"rtt length", func(f *Fleet, _ *Workload) { f.ClientRTT = f.ClientRTT[:1] }, "client RTT has 1 entries"},
		{"negative rtt", func(f *Fleet, _ *Workload) { f.ClientRTT = []float64{-1, 0} }, "client RTT to servers[0]"},
		{"tau", func(f *Fleet, _ *Workload) { f.Servers[1].Hardware.Tau = -1 }, "servers[1] (B): tau"},
		{"backoff", func(f *Fleet, _ *Workload) { f.Petals.MaxBackoff = 0.5 }, "back-off"},
		{"no servers", func(f *Fleet, _ *Workload) { f.Servers = nil }, "no servers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := *f
			g.Servers = append([]Server(nil), f.Servers...)
			w := tinyWork
			tt.edit(&g, &w)
			_, err := Run(&g, w, Algorithms(), rand.New(rand.NewPCG(1, 1)), nil)
			require.ErrorIs(t, err, ErrBadConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := LookupAlgorithm("fastest")
	require.ErrorIs(t, err, ErrBadConfig)
	require.ErrorContains(t, err, "proposed, petals, opt-order, opt-number, opt-rr")
}

func TestInfeasiblePlacementIsReportedPerAlgorithm(t *testing.T) {
	// Memory 150: one block per server, two servers, four blocks.
	res, err := Run(tinyFleet(150), tinyWork, Algorithms(), rand.New(rand.NewPCG(1, 1)), nil)
	require.NoError(t, err)
	for _, r := range res {
		require.Zero(t, r.Runs, r.Algorithm)
		require.NotEmpty(t, r.Errors, r.Algorithm)
		require.Contains(t, r.Errors[0], placement.ErrInfeasible.Error(), r.Algorithm)
	}
}

func TestSummarize(t *testing.T) {
	runs := [][]Result{
		{{Algorithm: "x", PerToken: 1, FirstToken: 10, Runs: 1, Blocks: map[string]float64{"A100": 50}}},
		{{Algorithm: "x", PerToken: 3, FirstToken: 20, Runs: 1, Blocks: map[string]float64{"A100": 52}}},
		{{Algorithm: "x", Errors: []string{"boom"}}},
	}
	s := Summarize(runs)
	require.Len(t, s, 1)
	require.Equal(t, 2, s[0].Runs)
	require.Equal(t, 2.0, s[0].PerToken)
	require.Equal(t, 15.0, s[0].FirstToken)
	require.Equal(t, map[string]float64{"A100": 51}, s[0].Blocks)
	require.Equal(t, []string{"boom"}, s[0].Errors)
}
