package fleet_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/fleet"
	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/routing"
)

func load(t *testing.T, name string) fleet.Fleet {
	t.Helper()
	fl, err := fleet.Load(filepath.Join("testdata", name))
	require.NoError(t, err)
	return fl
}

// TestPlanScript runs testdata/plan.txt (regenerate with -rewrite and
// review the diff by hand):
//
//	sessions file=F                    R and its source, or the error
//	plan file=F [algorithm=A] [sessions=R] [max-length=L] [json]
//	                                   Plan.WriteText (or WriteJSON)
func TestPlanScript(t *testing.T) {
	datadriven.RunTest(t, filepath.Join("testdata", "plan.txt"), func(t *testing.T, d *datadriven.TestData) string {
		var file string
		d.ScanArgs(t, "file", &file)
		fl := load(t, file)
		r, source, err := fl.ChooseSessions()
		if d.Cmd == "sessions" {
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return fmt.Sprintf("R = %d (%s)\n", r, source)
		}
		require.Equal(t, "plan", d.Cmd)
		require.NoError(t, err)
		o := fleet.Options{Algorithm: "cgbp", Sessions: r, Source: source}
		if d.HasArg("algorithm") {
			d.ScanArgs(t, "algorithm", &o.Algorithm)
		}
		if d.HasArg("sessions") {
			d.ScanArgs(t, "sessions", &o.Sessions)
			o.Source = "test"
		}
		if d.HasArg("max-length") {
			d.ScanArgs(t, "max-length", &o.MaxLength)
		}
		p, err := fl.Plan(o)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		var b strings.Builder
		if d.HasArg("json") {
			require.NoError(t, p.WriteJSON(&b))
		} else {
			require.NoError(t, p.WriteText(&b))
		}
		return b.String()
	})
}

// TestPlanRoutesWithTheSimulatorsPairs: each placement is routed as the
// simulator routes it (sim.ForPlacement), the exhaustive optimum by WS-RR.
func TestPlanRoutesWithTheSimulatorsPairs(t *testing.T) {
	fl := load(t, "fig5.json")
	want := map[string]string{"cgbp": "wsrr", "petals": "petals", "opt-order": "petals", "opt-number": "petals", "optimal": "wsrr",
		"cgbp-live": "wsrr", "cgbp-replan": "wsrr", "refined": "wsrr"}
	require.ElementsMatch(t, placement.Names(), keys(want), "a new placement needs its routing here")
	for name, routing := range want {
		p, err := fl.Plan(fleet.Options{Algorithm: name, Sessions: 4})
		require.NoError(t, err, name)
		require.Equal(t, name, p.Algorithm.Placement)
		require.Equal(t, routing, p.Algorithm.Routing, name)
		require.Equal(t, fleet.DefaultMaxLength, p.MaxLength)
	}
}

// TestPlanFig5 checks the Plan fields on Fig. 5 of paper 003 (L = 2, four
// servers of 600 bytes, R = 4): CG-BP chains one-block servers, 2 (0.1 +
// 0.01) = 0.22 s per token; the optimum puts both blocks everywhere,
// 0.1 + 2 * 0.01 = 0.12 s, which (B.8) matches.
func TestPlanFig5(t *testing.T) {
	fl := load(t, "fig5.json")
	p, err := fl.Plan(fleet.Options{Algorithm: "cgbp", Sessions: 4, MaxLength: 7})
	require.NoError(t, err)
	require.NoError(t, p.Infeasible)
	require.Equal(t, 7, p.MaxLength)
	require.Equal(t, 4, p.Input.Sessions)
	require.Equal(t, 1, fl.Input.Sessions, "Plan does not change the fleet")
	require.Len(t, p.Routes, 1)
	require.InDelta(t, 0.22, p.Routes[0].PerToken, 1e-12)
	require.Len(t, p.Routes[0].Hops, 2)
	require.NotNil(t, p.LowerBound)
	require.InDelta(t, 0.12, *p.LowerBound, 1e-12)
	require.InDelta(t, 0.12, *p.ClientLowerBound[0], 1e-12)
	// single-session bound: one hop of both blocks, 0.1 + 2 * 0.01
	require.NotNil(t, p.SessionBound)
	require.InDelta(t, 0.12, *p.SessionBound, 1e-12)

	opt, err := fl.Plan(fleet.Options{Algorithm: "optimal", Sessions: 4})
	require.NoError(t, err)
	require.InDelta(t, 0.12, opt.Routes[0].PerToken, 1e-12)
	s := opt.Summary()
	require.True(t, s.Feasible)
	require.Equal(t, fleet.NamedSpan{Name: "s0", Start: 0, End: 2}, s.Servers[0])
	require.Equal(t, []fleet.NamedSpan{{Name: "s0", Start: 0, End: 2}}, s.Routes["c0"].Chain)
}

// TestPlanInfeasibleIsNotAnError: beyond R = 206, condition (18) fails on
// the clustered fleet; the plan says why, and no chain reaches block 68.
func TestPlanInfeasibleIsNotAnError(t *testing.T) {
	fl := load(t, "clustered.json")
	p, err := fl.Plan(fleet.Options{Algorithm: "cgbp", Sessions: 207})
	require.NoError(t, err)
	require.ErrorIs(t, p.Infeasible, placement.ErrInfeasible)
	require.Nil(t, p.UpperBound)
	require.NotNil(t, p.LowerBound)
	require.False(t, p.Summary().Feasible)
	require.Empty(t, p.Summary().Routes)
	for c := range fl.Input.Clients {
		require.Nil(t, p.Routes[c])
		require.ErrorIs(t, p.RouteErrs[c], routing.ErrNoRoute)
	}
}

func TestPlanErrors(t *testing.T) {
	fl := load(t, "clustered.json")
	_, err := fl.Plan(fleet.Options{Algorithm: "greedy", Sessions: 1})
	require.ErrorIs(t, err, placement.ErrUnknownAlgorithm)
	_, err = fl.Plan(fleet.Options{Algorithm: "cgbp"})
	require.ErrorIs(t, err, placement.ErrBadInput)
	_, err = fl.Plan(fleet.Options{Algorithm: "optimal", Sessions: 1})
	require.ErrorContains(t, err, "plan optimal: placement: instance too large")

	fl.TargetSessions, fl.ArrivalRate, fl.SessionTime = 0, 0, 0
	_, _, err = fl.ChooseSessions()
	require.ErrorIs(t, err, fleet.ErrNoSessions)
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
