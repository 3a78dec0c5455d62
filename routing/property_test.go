package routing_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// randomSnapshot draws a small fleet with random spans, speeds, cache
// capacities and open sessions.
func randomSnapshot(rng *rand.Rand) ([]routing.Server, routing.Request) {
	l := 2 + rng.IntN(5)
	n := 1 + rng.IntN(7)
	req := routing.Request{Blocks: l, MaxLength: 1 + rng.IntN(64), Now: 10 * rng.Float64(), Prefill: rng.IntN(3) == 0}
	servers := make([]routing.Server, n)
	for j := range servers {
		a := rng.IntN(l)
		if rng.IntN(3) == 0 {
			a = 0 // make block 0 likely hosted
		}
		b := a + 1 + rng.IntN(l-a)
		s := routing.Server{
			Name:       string(rune('a' + j)),
			Span:       swarm.Span{Start: a, End: b},
			Tau:        0.001 + 0.05*rng.Float64(),
			RTT:        0.2 * rng.Float64(),
			TauPrefill: 0.5 * rng.Float64(),
			RTTPrefill: 0.5 * rng.Float64(),
			CacheSlots: rng.IntN(3 * l),
			AsOf:       req.Now - 5*rng.Float64(),
		}
		for range rng.IntN(4) {
			s.Sessions = append(s.Sessions, swarm.SessionLoad{Remaining: 20 * rng.Float64(), Caches: rng.IntN(l + 1)})
		}
		if rng.IntN(8) == 0 {
			s.CacheSlots = routing.UnlimitedCache
		}
		servers[j] = s
	}
	return servers, req
}

// chains enumerates every chain of the snapshot that Lemma 3.1 allows, by
// brute force (independently of routing.NewGraph): from the next block to
// process, any server hosting it may follow.
func chains(servers []routing.Server, l int) [][]int {
	var out [][]int
	var walk func(next int, chain []int)
	walk = func(next int, chain []int) {
		if next == l {
			out = append(out, append([]int(nil), chain...))
			return
		}
		for j, s := range servers {
			if s.Span.Start <= next && next < s.Span.End {
				walk(s.Span.End, append(chain, j))
			}
		}
	}
	walk(0, nil)
	return out
}

// objectives evaluates a chain: WS-RR's sum of t^W + l_max t^c, (21a)'s
// max t^W + l_max sum t^c, and the PETALS heuristic weight.
func objectives(servers []routing.Server, req routing.Request, chain []int) (ws, opt, petals float64) {
	next, maxWait, sumCost := 0, 0.0, 0.0
	p := routing.DefaultPetalsParams()
	for h, j := range chain {
		s := servers[j]
		k := s.Span.End - next
		w := routing.WaitTime(s, k, req.Now)
		c := routing.LinkCost(s, k, req)
		ws += w + float64(req.MaxLength)*c
		maxWait = max(maxWait, w)
		sumCost += c
		petals += s.RTT/2 + p.Overhead + s.Tau*float64(k)
		if free := freeSlots(s, req.Now); free < k {
			petals += p.AllocPenalty
		}
		if h == len(chain)-1 {
			petals += s.RTT / 2
		}
		next = s.Span.End
	}
	return ws, maxWait + float64(req.MaxLength)*sumCost, petals
}

func freeSlots(s routing.Server, now float64) int {
	if s.CacheSlots < 0 {
		return math.MaxInt
	}
	free := s.CacheSlots
	for _, l := range s.Sessions {
		if l.Remaining-(now-s.AsOf) > 0 {
			free -= l.Caches
		}
	}
	return free
}

// TestWSRR_EqualsExhaustive checks, on random small snapshots, that WS-RR's
// route costs exactly the least waiting-penalized cost over all feasible
// chains found by brute force, that OptimizedRR attains the exact optimum
// of (21), that Petals attains the least heuristic weight, and that every
// returned chain is feasible (Lemma 3.1).
func TestWSRR_EqualsExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2025))
	routed, unroutable := 0, 0
	for iter := range 3000 {
		servers, req := randomSnapshot(rng)
		bestWS, bestOpt, bestPetals := math.Inf(1), math.Inf(1), math.Inf(1)
		for _, c := range chains(servers, req.Blocks) {
			ws, opt, pet := objectives(servers, req, c)
			bestWS, bestOpt = min(bestWS, ws), min(bestOpt, opt)
			bestPetals = min(bestPetals, pet)
		}
		ws, err := routing.WSRR(servers, req)
		if math.IsInf(bestWS, 1) {
			require.ErrorIs(t, err, routing.ErrNoRoute, "iter %d", iter)
			_, err = routing.OptimizedRR(servers, req)
			require.ErrorIs(t, err, routing.ErrNoRoute, "iter %d", iter)
			unroutable++
			continue
		}
		require.NoError(t, err, "iter %d", iter)
		require.InDelta(t, bestWS, ws.Cost, 1e-9*max(1, bestWS), "iter %d: WS-RR", iter)
		gotWS, gotOpt, _ := objectives(servers, req, ws.Chain())
		require.InDelta(t, ws.Cost, gotWS, 1e-9*max(1, gotWS), "iter %d: WS-RR cost matches its chain", iter)

		opt, err := routing.OptimizedRR(servers, req)
		require.NoError(t, err, "iter %d", iter)
		require.InDelta(t, bestOpt, opt.Cost, 1e-9*max(1, bestOpt), "iter %d: (21)", iter)
		require.LessOrEqual(t, opt.Cost, gotOpt+1e-9, "iter %d: (21) optimum beats WS-RR's chain", iter)

		pet, err := routing.Petals(servers, req, routing.DefaultPetalsParams())
		if math.IsInf(bestPetals, 1) {
			require.ErrorIs(t, err, routing.ErrNoRoute)
		} else {
			require.NoError(t, err, "iter %d", iter)
			require.InDelta(t, bestPetals, pet.Cost, 1e-9*max(1, bestPetals), "iter %d: PETALS", iter)
		}

		spans := make([]swarm.Span, len(servers))
		for j, s := range servers {
			spans[j] = s.Span
		}
		for _, r := range []routing.Route{ws, opt} {
			processed, err := routing.CheckChain(spans, req.Blocks, r.Chain())
			require.NoError(t, err, "iter %d", iter)
			for h, hop := range r.Hops {
				require.Equal(t, processed[h], hop.Span, "iter %d hop %d", iter, h)
			}
		}
		routed++
	}
	t.Logf("%d routable and %d unroutable random snapshots compared with exhaustive search", routed, unroutable)
	require.Greater(t, routed, 1000)
	require.Greater(t, unroutable, 50)
}

// TestCorollary3_7_NoWaitBelowCapacity: with every server's open sessions
// leaving room for the new one, WS-RR never waits and its cost is
// l_max times the per-token time (Corollary 3.7).
func TestCorollary3_7_NoWaitBelowCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	for iter := range 500 {
		servers, req := randomSnapshot(rng)
		for j := range servers {
			// room for the open sessions plus one more using every block
			held := 0
			for _, l := range servers[j].Sessions {
				held += l.Caches
			}
			servers[j].CacheSlots = held + req.Blocks
		}
		r, err := routing.WSRR(servers, req)
		if err != nil {
			require.ErrorIs(t, err, routing.ErrNoRoute)
			continue
		}
		require.Zero(t, r.Wait, "iter %d", iter)
		require.InDelta(t, float64(req.MaxLength)*r.PerToken, r.Cost, 1e-9, "iter %d", iter)
	}
}

func TestValidation(t *testing.T) {
	ok := routing.Server{Name: "a", Span: swarm.Span{Start: 0, End: 2}, Tau: 0.01, RTT: 0.1, CacheSlots: 4}
	req := routing.Request{Blocks: 2, MaxLength: 8}
	tests := []struct {
		name   string
		mutate func(*routing.Server, *routing.Request)
		want   string
	}{
		{"no blocks", func(_ *routing.Server, r *routing.Request) { r.Blocks = 0 }, "request blocks L = 0"},
		{"no length", func(_ *routing.Server, r *routing.Request) { r.MaxLength = 0 }, "l_max = 0"},
		{"nan now", func(_ *routing.Server, r *routing.Request) { r.Now = math.NaN() }, "now = NaN"},
		{"span past L", func(s *routing.Server, _ *routing.Request) { s.Span.End = 3 }, "servers[0] (a).span"},
		{"negative tau", func(s *routing.Server, _ *routing.Request) { s.Tau = -1 }, "servers[0] (a).tau = -1"},
		{"inf rtt", func(s *routing.Server, _ *routing.Request) { s.RTT = math.Inf(1) }, "servers[0] (a).rtt = +Inf"},
		{"slots", func(s *routing.Server, _ *routing.Request) { s.CacheSlots = -2 }, "cache_slots = -2"},
		{"session", func(s *routing.Server, _ *routing.Request) {
			s.Sessions = []swarm.SessionLoad{{Remaining: 1, Caches: -1}}
		}, "sessions[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, r := ok, req
			tt.mutate(&s, &r)
			for _, f := range []func([]routing.Server, routing.Request) (routing.Route, error){
				routing.WSRR, routing.OptimizedRR,
				func(ss []routing.Server, rr routing.Request) (routing.Route, error) {
					return routing.Petals(ss, rr, routing.DefaultPetalsParams())
				},
			} {
				_, err := f([]routing.Server{s}, r)
				require.ErrorIs(t, err, routing.ErrBadInput)
				require.ErrorContains(t, err, tt.want)
			}
		})
	}
	_, err := routing.Petals([]routing.Server{ok}, req, routing.PetalsParams{Ping: [][]float64{{0, 1}}})
	require.ErrorIs(t, err, routing.ErrBadInput)
	require.ErrorContains(t, err, "ping[0] has 2 entries")
}

// TestFromServerInfo checks eq. (20)'s cache slots come from the capacity
// and per-token cache bytes the server advertises.
func TestFromServerInfo(t *testing.T) {
	info := swarm.ServerInfo{
		ID: "peer-1", Span: swarm.Span{Start: 2, End: 6}, Tau: 0.01,
		TauI:               swarm.PrefillFit{Intercept: 0.03, Slope: 0.001},
		MemoryBytes:        4000 + 3*2*100 + 150, // 4 blocks of 1000 bytes, 3 caches of 100 tokens, 150 spare bytes
		CacheBytesCapacity: 3*2*100 + 150,
		CacheBytesPerToken: 2,
		Sessions:           []swarm.SessionLoad{{Remaining: 5, Caches: 2}},
	}
	s := routing.FromServerInfo(info, 100, 20, 0.05, 0.2, 7)
	require.Equal(t, routing.Server{
		Name: "peer-1", Span: info.Span, Tau: 0.01, RTT: 0.05, TauPrefill: 0.03 + 0.001*20, RTTPrefill: 0.2,
		CacheSlots: 3, Sessions: info.Sessions, AsOf: 7,
	}, s)
	info.FullRange = true
	require.Equal(t, routing.UnlimitedCache, routing.FromServerInfo(info, 100, 20, 0.05, 0.2, 7).CacheSlots)
	info.FullRange, info.CacheBytesCapacity = false, 0
	require.Equal(t, routing.UnlimitedCache, routing.FromServerInfo(info, 100, 20, 0.05, 0.2, 7).CacheSlots)
	info.CacheBytesCapacity, info.CacheBytesPerToken = 750, 0
	require.Equal(t, routing.UnlimitedCache, routing.FromServerInfo(info, 100, 20, 0.05, 0.2, 7).CacheSlots)
}

// TestFromServerInfoSliding counts a server's cache slots per block when
// its span holds sliding-window blocks (eq. 2 with s_c per block): blocks
// 2 and 4 of span [2, 6) slide (pattern 2) with a window of 36, so for
// sessions of 200 tokens they hold 36 + swarm.SlidingRewind = 100
// positions. One session over the span needs 2 bytes * (200+100+200+100)
// = 1200 bytes; 3750 bytes hold 3 such sessions (12 block caches, 150
// bytes spare). Counting every block as full (2 * 200 bytes) would give 9
// slots, 2 sessions.
func TestFromServerInfoSliding(t *testing.T) {
	require.Equal(t, 64, swarm.SlidingRewind, "the figures below")
	info := swarm.ServerInfo{
		ID: "gemma", Span: swarm.Span{Start: 2, End: 6}, CacheBytesCapacity: 3*1200 + 150, CacheBytesPerToken: 2,
		SlidingWindow: 36, SlidingPattern: 2,
	}
	require.Equal(t, int64(1200), info.CacheBytes(info.Span, 200))
	require.Equal(t, 12, routing.FromServerInfo(info, 200, 1, 0, 0, 0).CacheSlots)
	// Sessions of at most 100 tokens gain nothing: 4 blocks * 2 * 100.
	require.Equal(t, 3750/200, routing.FromServerInfo(info, 100, 1, 0, 0, 0).CacheSlots)
	// An older server advertises no window: every block counts as full.
	info.SlidingWindow, info.SlidingPattern = 0, 0
	require.Equal(t, 9, routing.FromServerInfo(info, 200, 1, 0, 0, 0).CacheSlots)
}
