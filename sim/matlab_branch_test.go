package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// This file documents why our remaining-token times differ from the
// MATLAB columns of paper 003's Table C.8 (clustered scenario). The
// authors' clustered runs come from the realnet = 0 branch of
// test_general_case_online.m (LLM_inference_simulator@3f78053), whose
// parameters are not issue 6's (which are those of its realnet = 1 branch
// and of the General_varying_*_online.m sweeps). For the same placement
// and chain, both simulators compute eq. (1) the same way (WS_RR.m:
// RTT(c,j) + tau(j) k per hop and token, RTT = ping + overhead_delay); the
// difference is in these values:
//
//	variable (realnet = 0)         MATLAB               issue 6 / ours
//	overhead_delay                 50 ms                100 ms
//	tau, A100                      2.2197 ms (*)        3.2197 ms
//	overhead_delay_input           55 ms                0.7049 lI + 67 ms
//	tau_input                      tau + 5 ms (A100),   0.0743 lI + 32.99 ms,
//	                               tau + 35 ms (MIG)    0.1041 lI + 206.35 ms
//	lc_in                          10                   20
//	M, A100                        79.138427734375 GB   86.13 GB
//	lambda                         0.001 /ms = 1 /s     the table's 0.1 or 0.5 /s
//
// (*) the branch first sets 3.2197 in its server loop, then overwrites
// tau(n_local_server+1:n_server) = 2.2197. The lambda override would also
// explain why the MATLAB columns for 0.1 and 0.5 requests/s are identical.
// matlabClusteredBranch builds that fleet; lc_in goes in the workload.
func matlabClusteredBranch(t *testing.T, clientCluster int) *Fleet {
	t.Helper()
	f, err := Clustered(clientCluster)
	require.NoError(t, err)
	f.Overheads = Overheads{PerToken: 0.050, Prefill: swarm.PrefillFit{Intercept: 0.055}}
	for j := range f.Servers {
		h := &f.Servers[j].Hardware
		switch h.Kind {
		case "A100":
			h.Tau = 2.2197e-3
			h.TauI = swarm.PrefillFit{Intercept: (2.2197 + 5) * 1e-3}
			h.MemoryBytes = 79_138_427_734
		case "MIG":
			h.TauI = swarm.PrefillFit{Intercept: (16.2488 + 35) * 1e-3}
		}
	}
	return f
}

// matlabBranchWork is the workload of the realnet = 0 branch.
func matlabBranchWork(requests, outputTokens int) Workload {
	return Workload{Rate: 1, Requests: requests, InputTokens: 10, OutputTokens: outputTokens}
}

// TestTableC8ProposedRemainingTokens: one idle session of the proposed
// algorithm goes through both A100s (64 + 6 blocks, or 55 + 15, ...: 70
// blocks in two hops) in every cluster, so its remaining-token time is, by
// hand,
//
//	ours (issue 6)   2 (RTT + 0.100) + 70 * 3.2197e-3
//	                 C0, C2 (RTT 100 ms): 0.625379 s; C1 (5 ms): 0.435379 s
//	MATLAB branch    2 (RTT + 0.050) + 70 * 2.2197e-3
//	                 C0, C2: 0.455379 s;  C1: 0.265379 s
//
// which are Table C.8's MATLAB values (0.45 for C0 and C2, 0.26 for C1 at
// l_max = 128): the 0.170 s gap is 2 hops x 50 ms + 70 blocks x 1 ms, no
// routing or R difference. The first token of that session under the
// MATLAB calibration is 60 + 0.1 + 2 (RTT + 0.055) + 70 * 7.2197e-3 =
// 60.915379 s in C0 and C2 (Table C.7 MATLAB, l_max = 128: 60.91) and
// 60.725379 s in C1.
func TestTableC8ProposedRemainingTokens(t *testing.T) {
	proposed, err := LookupAlgorithm("proposed")
	require.NoError(t, err)
	for _, tt := range []struct {
		cluster                int
		ours, matlab, matlabFT float64
	}{
		{0, 0.625379, 0.455379, 60.915379},
		{1, 0.435379, 0.265379, 60.725379},
		{2, 0.625379, 0.455379, 60.915379},
	} {
		for _, l := range []int{64, 128} {
			f, err := Clustered(tt.cluster)
			require.NoError(t, err)
			res, err := Run(f, Workload{Rate: 0.1, Requests: 1, InputTokens: 20, OutputTokens: l}, []Algorithm{proposed}, rand.New(rand.NewPCG(1, 1)), nil)
			require.NoError(t, err)
			require.Equal(t, 2.0, res[0].Hops)
			require.InDelta(t, tt.ours, res[0].RemainingToken, 1e-9, "C%d l_max %d", tt.cluster, l)

			g := matlabClusteredBranch(t, tt.cluster)
			g.Calibration, _ = MATLABCalibration(MATLABClustered)
			res, err = Run(g, matlabBranchWork(1, l), []Algorithm{proposed}, rand.New(rand.NewPCG(1, 1)), nil)
			require.NoError(t, err)
			require.Equal(t, 2.0, res[0].Hops)
			require.InDelta(t, tt.matlab, res[0].RemainingToken, 1e-9, "C%d l_max %d", tt.cluster, l)
			require.InDelta(t, tt.matlabFT, res[0].FirstToken, 1e-9, "C%d l_max %d", tt.cluster, l)
		}
	}
}

// TestPetalsIdleChainOverJoinOrders enumerates where the two A100s join
// among the nine servers (72 orders; the MIGs are identical) and routes
// one idle PETALS session, under our parameters and the MATLAB branch's.
// PETALS gives an A100 floor((M - 2 GiB) / (s_m + 4096 * 57344)) blocks:
// 53 for 86.13 GB, 49 for 79.138 GB. When both A100s join first they
// cover the model (A100-0 [0,m), A100-1 [70-m,70)) and the chain is the
// proposed algorithm's two-A100 chain; other orders put MIGs on the chain.
// The remaining-token time of PETALS thus depends on the join order
// (0.455 .. 1.542 s in C0 with the branch's parameters), and a MATLAB
// value that is a single run's (num_MC_runs = 1 in
// test_general_case_online.m) is one draw of that distribution.
func TestPetalsIdleChainOverJoinOrders(t *testing.T) {
	petals, err := LookupAlgorithm("petals")
	require.NoError(t, err)
	for _, tt := range []struct {
		name     string
		fleet    func(cluster int) *Fleet
		work     Workload
		a100     int
		twoA100s [3]float64 // by hand, as in TestTableC8ProposedRemainingTokens
	}{
		{"ours", func(c int) *Fleet { f, _ := Clustered(c); return f }, Workload{Rate: 0.1, Requests: 1, InputTokens: 20, OutputTokens: 128},
			53, [3]float64{0.625379, 0.435379, 0.625379}},
		{"matlab-branch", func(c int) *Fleet { return matlabClusteredBranch(t, c) }, matlabBranchWork(1, 128),
			49, [3]float64{0.455379, 0.265379, 0.455379}},
	} {
		for cluster := range 3 {
			f := tt.fleet(cluster)
			var all []float64
			chains := map[string]int{}
			for p := range 9 {
				for q := range 9 {
					if p == q {
						continue
					}
					order := make([]int, 0, 9)
					mig := 2
					for k := range 9 {
						switch k {
						case p:
							order = append(order, 0) // A100-0
						case q:
							order = append(order, 1) // A100-1
						default:
							order = append(order, mig)
							mig++
						}
					}
					plan, _, err := petals.place(f.placementInput(tt.work, 1, order, &petals))
					require.NoError(t, err)
					require.Equal(t, tt.a100, plan.Spans[0].Len())
					e, err := newEngine(f, tt.work, petals, plan, nil)
					require.NoError(t, err)
					c, err := e.routeNow()
					require.NoError(t, err)
					_, d := e.times(c)
					if p < 2 && q < 2 {
						require.Len(t, c, 2, "both A100s joined first")
						require.InDelta(t, tt.twoA100s[cluster], d, 1e-9)
					}
					var hops []string
					for _, h := range c {
						hops = append(hops, fmt.Sprintf("%s:%d", f.Servers[h.server].Hardware.Kind, h.blocks))
					}
					chains[fmt.Sprintf("%.3f s  %s", d, strings.Join(hops, " "))]++
					all = append(all, d)
				}
			}
			mean := 0.0
			for _, d := range all {
				mean += d / float64(len(all))
			}
			t.Logf("%s C%d: idle PETALS remaining-token time over %d join orders: min %.3f, mean %.3f, max %.3f s",
				tt.name, cluster, len(all), slices.Min(all), mean, slices.Max(all))
			keys := make([]string, 0, len(chains))
			for k := range chains {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				t.Logf("    %2d orders: %s", chains[k], k)
			}
		}
	}
}

// TestMATLABClusteredBranchUnderLoad runs the proposed algorithm in the
// Table 4 cells on the MATLAB branch's fleet with the MATLAB calibration,
// 100 requests at the branch's 1 request/s, 20 runs (PCG streams (1, k) as
// `swarm sim --seed 1`; -short: 2 runs), and logs what our simulator
// computes next to Table C.8's MATLAB values. With these parameters the
// remaining tokens cost what the MATLAB reports whenever sessions stay on
// the two-A100 chain; no run may beat that chain. (PETALS is left out: its
// retries under the 250 s allocation delay make this test ten times
// slower; TestPetalsIdleChainOverJoinOrders covers its chains.)
func TestMATLABClusteredBranchUnderLoad(t *testing.T) {
	proposed, err := LookupAlgorithm("proposed")
	require.NoError(t, err)
	matlabRT := map[[2]int]float64{ // Table C.8 MATLAB, proposed, (cluster, l_max)
		{0, 64}: 0.45, {0, 128}: 0.45,
		{1, 64}: 0.32, {1, 128}: 0.26,
		{2, 64}: 0.45, {2, 128}: 0.45,
	}
	twoA100s := [3]float64{0.455379, 0.265379, 0.455379}
	nRuns := 20
	if testing.Short() {
		nRuns = 2 // the same checks on fewer runs; the log is then not the 20-run table
	}
	for cluster := range 3 {
		for _, l := range []int{64, 128} {
			var runs [][]Result
			for k := range nRuns {
				f := matlabClusteredBranch(t, cluster)
				f.Calibration, _ = MATLABCalibration(MATLABClustered)
				res, err := Run(f, matlabBranchWork(100, l), []Algorithm{proposed}, rand.New(rand.NewPCG(1, uint64(k))), nil)
				require.NoError(t, err)
				require.Empty(t, res[0].Errors)
				runs = append(runs, res)
			}
			s := Summarize(runs)[0]
			require.GreaterOrEqual(t, s.RemainingToken, twoA100s[cluster]-1e-9)
			t.Logf("%d runs, C%d l_max %3d: proposed per-token %.3f, first token %.2f, waiting %.2f, remaining %.3f s (C.8 MATLAB %.2f), hops %.2f, R %.0f",
				nRuns, cluster, l, s.PerToken, s.FirstToken, s.Waiting, s.RemainingToken, matlabRT[[2]int{cluster, l}], s.Hops, s.R)
		}
	}
}
