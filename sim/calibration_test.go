package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// tinyCalibration has constants that are easy to add by hand: 0.1 s
// before every prefill, plus 2 s for proposed and 5 s for petals; the other
// algorithms are not listed and get the 0.1 s only.
func tinyCalibration(round bool) Calibration {
	return Calibration{
		Name:            "test",
		InitialDelay:    0.1,
		AllocationDelay: map[string]float64{"proposed": 2, "petals": 5},
		RoundWaits:      round,
	}
}

// One session on an idle tiny fleet: the constants add to the first token
// and to the total, never to the remaining tokens (eq. 1 by hand in
// engine_test.go: F = 1.54 s, D = 0.86 s, l_max = 3).
//
//	proposed   F' = 0.1 + 2 + 1.54 = 3.64 s, total 3.64 + 2*0.86 = 5.36 s
//	petals     F' = 0.1 + 5 + 1.54 = 6.64 s, total 8.36 s
//	opt-rr     F' = 0.1 + 1.54     = 1.64 s, total 3.36 s (not listed)
func TestCalibrationAddsConstantsToFirstToken(t *testing.T) {
	for _, tt := range []struct {
		alg   string
		first float64
	}{
		{"proposed", 3.64},
		{"petals", 6.64},
		{"opt-order", 1.64},
		{"opt-number", 1.64},
		{"opt-rr", 1.64},
	} {
		t.Run(tt.alg, func(t *testing.T) {
			f := tinyFleet(250)
			f.Calibration = tinyCalibration(true)
			a, err := LookupAlgorithm(tt.alg)
			require.NoError(t, err)
			res, err := Run(f, tinyWork, []Algorithm{a}, rand.New(rand.NewPCG(1, 2)), nil)
			require.NoError(t, err)
			r := res[0]
			require.Empty(t, r.Errors)
			require.InDelta(t, tt.first, r.FirstToken, 1e-12)
			require.InDelta(t, tinyDecode, r.RemainingToken, 1e-12)
			require.InDelta(t, (tt.first+2*tinyDecode)/3, r.PerToken, 1e-12)
			require.Zero(t, r.Waiting)
		})
	}
}

// With the cache room for one session per server (memory 214), sessions
// arriving at 0, 1 and 1.5 s queue behind each other. Session 0 holds its
// caches through the constants: it ends at 0.1 + 2 + 3.26 = 5.36 s.
// Session 1 (arrival 1) has room at 5.36, a raw wait of 4.36 s, which the
// PETALS back-off schedule 1, 1+2, 1+2+4 rounds up to 7 s: it starts at 8
// and ends at 8 + 5.36 = 13.36. Session 2 (arrival 1.5) has room at 13.36,
// a raw wait of 11.86 s, rounded to 1+2+4+8 = 15 s: it starts at 16.5.
// Without rounding, they start at 5.36 and 10.72.
func TestCalibrationRoundsWaitsToBackoffSteps(t *testing.T) {
	for _, tt := range []struct {
		round      bool
		start, end [3]float64
	}{
		{true, [3]float64{0, 8, 16.5}, [3]float64{5.36, 13.36, 21.86}},
		{false, [3]float64{0, 5.36, 10.72}, [3]float64{5.36, 10.72, 16.08}},
	} {
		e := tinyEngine(t, "proposed", func(f *Fleet) { f.Calibration = tinyCalibration(tt.round) })
		require.NoError(t, e.run([]float64{0, 1, 1.5}))
		for i, s := range e.sessions {
			require.InDelta(t, tt.start[i], s.start, 1e-12, "round %v, session %d", tt.round, i)
			require.InDelta(t, tt.end[i], s.end, 1e-12, "round %v, session %d", tt.round, i)
			require.True(t, s.done)
		}
		var res Result
		e.summarize(&res)
		// first tokens: wait + 2.1 + 1.54 each
		wantFirst := (3*3.64 + (tt.start[1] - 1) + (tt.start[2] - 1.5)) / 3
		require.InDelta(t, wantFirst, res.FirstToken, 1e-12)
		require.InDelta(t, tinyDecode, res.RemainingToken, 1e-12)
	}
}

// PETALS retries on its own back-off schedule; the constants only make
// the first session hold its caches longer: it ends at 0.1 + 5 + 3.26 =
// 8.36 s, so session 1 (arrival 1) fails at 1, 2, 4 and 8 s and starts at
// 16 s, ending at 16 + 8.36 = 24.36 s, with a first token of 15 + 5.1 +
// 1.54 = 21.64 s.
func TestCalibrationPetalsRetries(t *testing.T) {
	e := tinyEngine(t, "petals", func(f *Fleet) { f.Calibration = tinyCalibration(true) })
	require.NoError(t, e.run([]float64{0, 1}))
	s0, s1 := e.sessions[0], e.sessions[1]
	require.InDelta(t, 8.36, s0.end, 1e-12)
	require.InDelta(t, 16, s1.start, 1e-12)
	require.Equal(t, 4, s1.retries)
	require.InDelta(t, 24.36, s1.end, 1e-12)
	var res Result
	e.summarize(&res)
	require.InDelta(t, (6.64+21.64)/2, res.FirstToken, 1e-12)
}

func TestBackoffWait(t *testing.T) {
	for _, tt := range []struct {
		w, min, max, want float64
	}{
		{0, 1, 60, 0},
		{-3, 1, 60, 0},
		{1e-9, 1, 60, 1},
		{1, 1, 60, 1},
		{1.5, 1, 60, 3},
		{3, 1, 60, 3},
		{7.01, 1, 60, 15},
		{63, 1, 60, 63},    // 1+2+4+8+16+32
		{63.5, 1, 60, 123}, // then 60 s steps
		{200, 1, 60, 243},
		{3.5, 1, 1.5, 4}, // 1, 2.5, 4
		{1e6, 1, 60, 63 + 60*math.Ceil((1e6-63)/60)},
	} {
		require.InDelta(t, tt.want, BackoffWait(tt.w, tt.min, tt.max), 1e-9, "w = %g", tt.w)
	}
}

func TestMATLABCalibrationConstants(t *testing.T) {
	for _, tt := range []struct {
		setup                   MATLABSetup
		initial, prop, petalsAD float64
	}{
		// initial_delay, allocation_delay_prop, allocation_delay_petals (ms / 1000)
		{MATLABClustered, 0.100, 60, 250},
		{MATLABTopology, 0.070, 60, 250},
		{MATLABLargeTopology, 0.070, 60, 350},
	} {
		c, ok := MATLABCalibration(tt.setup)
		require.True(t, ok)
		require.NoError(t, c.Validate())
		require.Equal(t, "matlab", c.Name)
		require.True(t, c.RoundWaits)
		require.InDelta(t, tt.initial, c.InitialDelay, 1e-15)
		require.Equal(t, map[string]float64{
			"proposed": tt.prop, "petals": tt.petalsAD, "opt-order": tt.petalsAD, "opt-number": tt.petalsAD, "opt-rr": tt.petalsAD,
		}, c.AllocationDelay)
		require.False(t, c.IsNone())
		require.Contains(t, c.Source, "3f78053")
	}
	_, ok := MATLABCalibration(0)
	require.False(t, ok)
	require.True(t, NoCalibration().IsNone())
	require.True(t, Calibration{}.IsNone())
	require.Equal(t, "calibration none (mechanism only)", NoCalibration().String())
	c, _ := MATLABCalibration(MATLABClustered)
	require.Contains(t, c.String(), "initial delay 100 ms, allocation delay 60 s for proposed, allocation delay 250 s for petals,opt-order,opt-number,opt-rr, waits rounded up to back-off steps")
}

func TestCalibrationSessionTimeIncludesInitialDelay(t *testing.T) {
	f := tinyFleet(250)
	f.Calibration = tinyCalibration(true)
	got, err := SessionTime(f, tinyWork)
	require.NoError(t, err)
	require.InDelta(t, 0.1+tinySession, got, 1e-12, "initial_delay, no allocation delay (BPRR_heuristic_general_extended.m)")
}

func TestCalibrationRejectsBadConstants(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    Calibration
		want string
	}{
		{"negative initial", Calibration{InitialDelay: -1}, "initial delay"},
		{"nan initial", Calibration{InitialDelay: math.NaN()}, "initial delay"},
		{"unknown algorithm", Calibration{AllocationDelay: map[string]float64{"fastest": 1}}, `unknown algorithm "fastest"`},
		{"infinite delay", Calibration{AllocationDelay: map[string]float64{"petals": math.Inf(1)}}, "allocation delay +Inf s for petals"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tinyFleet(250)
			f.Calibration = tt.c
			_, err := Run(f, tinyWork, Algorithms(), rand.New(rand.NewPCG(1, 1)), nil)
			require.ErrorIs(t, err, ErrBadConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// Under load with the authors' constants, every algorithm keeps the
// memory invariants (engine.start fails a run otherwise), every session
// still satisfies completion = first token + (l - 1) remaining, and the
// constants show up in full in every first token.
func TestCalibrationLoadedRunsKeepInvariants(t *testing.T) {
	for cc := range 3 {
		f, err := Clustered(cc)
		require.NoError(t, err)
		f.Calibration, _ = MATLABCalibration(MATLABClustered)
		w := Workload{Rate: 1, Requests: 60, InputTokens: 20, OutputTokens: 64}
		res, err := Run(f, w, Algorithms(), rand.New(rand.NewPCG(5, uint64(cc))), nil)
		require.NoError(t, err)
		for _, r := range res {
			require.Empty(t, r.Errors, r.Algorithm)
			require.InDelta(t, r.PerToken*64, r.FirstToken+63*r.RemainingToken, 1e-6, r.Algorithm)
			require.GreaterOrEqual(t, r.FirstToken, r.Waiting+0.1+f.Calibration.AllocationDelay[r.Algorithm], r.Algorithm)
		}
	}
}
