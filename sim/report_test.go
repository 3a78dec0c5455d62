package sim

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPaperTables(t *testing.T) {
	// Table 4 / C.7 / C.8, Cluster1, 0.5 requests/s, l_max = 128.
	pet, pro, ok := PaperClustered(1, 0.5, 128)
	require.True(t, ok)
	require.Equal(t, PaperValue{4.79, 4.58}, pet.PerToken)
	require.Equal(t, PaperValue{489.85, 424.06}, pet.FirstToken)
	require.Equal(t, PaperValue{0.97, 1.27}, pet.RemainingToken)
	require.Equal(t, PaperValue{1.11, 0.83}, pro.PerToken)
	require.Equal(t, PaperValue{65.96, 72.06}, pro.FirstToken)
	require.Equal(t, PaperValue{0.60, 0.26}, pro.RemainingToken)
	_, _, ok = PaperClustered(1, 0.3, 128)
	require.False(t, ok)
	_, _, ok = PaperClustered(4, 0.5, 128)
	require.False(t, ok)

	// Table 5 / C.9 / C.10, GTS-CE, 0.1 requests/s, l_max = 64.
	pet, pro, ok = PaperTopology("gtsce", 0.1, 64)
	require.True(t, ok)
	require.Equal(t, PaperValue{7.05, 6.12}, pet.PerToken)
	require.Equal(t, PaperValue{55.30, 62.84}, pro.FirstToken)
	require.Equal(t, PaperValue{0.52, 0.43}, pro.RemainingToken)
	_, _, ok = PaperTopology("Sprint", 0.1, 64)
	require.False(t, ok)

	n, a100, ok := PaperDeployment("Bellcanada")
	require.True(t, ok)
	require.Equal(t, [2]int{26, 5}, [2]int{n, a100})
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, []Result{
		{Algorithm: "proposed", PerToken: 0.5, FirstToken: 3, RemainingToken: 0.4, R: 12, Runs: 2, UpperBound: 0.6, LowerBound: 0.3, SessionBound: 0.35, Blocks: map[string]float64{"MIG": 4, "A100": 50}},
		{Algorithm: "petals", PerToken: 2, FirstToken: 60, RemainingToken: 1, Runs: 2, Errors: []string{"x"}},
		{Algorithm: "opt-rr", Errors: []string{"placement: infeasible", "again"}},
	}, 64))
	out := b.String()
	require.Contains(t, out, "A100 50.0, MIG 4.0")
	require.Contains(t, out, "proposed / petals: per-token 0.250, first token 0.050, remaining 0.400")
	require.Contains(t, out, "lower (B.8) 0.300 s, upper (17) 0.600 s")
	// l_max = 64: first (60 - 3)/64 = 0.890625, remaining 63 (1 - 0.4)/64
	// = 0.590625, gain 1.48125: 60.1% and 39.9%.
	require.Contains(t, out, "gain of proposed over petals: 1.481 s per token, 60% from the first token, 40% from the remaining tokens")
	require.Contains(t, out, "exact single-session lower bound (full RTT per hop, any placement) 0.350 s")
	require.Contains(t, out, "opt-rr failed in 2 run(s): placement: infeasible")
	require.Contains(t, out, "petals failed in 1 run(s): x")
}

func TestWriteTableLiveReplan(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, []Result{
		{Algorithm: "proposed", PerToken: 0.5, Runs: 1},
		{Algorithm: "live", PerToken: 0.8, Runs: 1},
		{Algorithm: "live-replan", PerToken: 0.51, Runs: 1, MovedBytes: 3.5e9, MoveSteps: 2},
	}, 64))
	out := b.String()
	require.Contains(t, out, "live-replan: replanning loads 3.50 GB of weights in 2.0 steps per run (mean)")
	require.Contains(t, out, "live-replan / proposed: per-token 1.020")
	require.NotContains(t, out, "live: replanning")
}

// Decompose by hand: l_max = 128, FT 300 s vs 60 s, RT 1.0 vs 0.5 s:
// first (300 - 60)/128 = 1.875, remaining 127 * 0.5 / 128 = 0.49609375,
// gain 2.37109375, first share 0.790774...
func TestDecompose(t *testing.T) {
	d, ok := Decompose(Result{FirstToken: 60, RemainingToken: 0.5, Runs: 1}, Result{FirstToken: 300, RemainingToken: 1, Runs: 1}, 128)
	require.True(t, ok)
	require.InDelta(t, 2.37109375, d.Gain, 1e-12)
	require.InDelta(t, 1.875/2.37109375, d.FirstShare, 1e-12)
	require.InDelta(t, 1, d.FirstShare+d.RemainingShare, 1e-12)
	_, ok = Decompose(Result{Runs: 1}, Result{Runs: 0}, 128)
	require.False(t, ok)
}

// Confidence interval by hand: per-token 1, 2, 3 over three runs: mean 2,
// s = 1, t_{0.975,2} = 4.303, half-width 4.303 / sqrt(3) = 2.48434.
func TestSummarizeCI(t *testing.T) {
	var runs [][]Result
	for _, v := range []float64{1, 2, 3} {
		runs = append(runs, []Result{{Algorithm: "a", PerToken: v, Runs: 1}})
	}
	got := Summarize(runs)
	require.InDelta(t, 2, got[0].PerToken, 1e-12)
	require.InDelta(t, 2.48434, got[0].PerTokenCI, 1e-5)
	require.Zero(t, got[0].FirstTokenCI)
	require.Zero(t, Summarize(runs[:1])[0].PerTokenCI)
}
