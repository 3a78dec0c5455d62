package enginebench_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/enginebench"
	"github.com/swarmllm/swarm/internal/llamabench"
	"github.com/swarmllm/swarm/internal/testenv"
)

func TestMedians(t *testing.T) {
	odd := enginebench.Medians([]enginebench.Figures{
		{LoadS: 3, PrefillTokS: 10, DecodeTokS: 5}, {LoadS: 1, PrefillTokS: 30, DecodeTokS: 4}, {LoadS: 2, PrefillTokS: 20, DecodeTokS: 9},
	})
	require.Equal(t, enginebench.Figures{LoadS: 2, PrefillTokS: 20, DecodeTokS: 5}, odd)
	even := enginebench.Medians([]enginebench.Figures{{LoadS: 1, DecodeTokS: 2}, {LoadS: 4, DecodeTokS: 3}})
	require.Equal(t, enginebench.Figures{LoadS: 2.5, DecodeTokS: 2.5}, even)
}

// TestPromptIDs checks the formula llama_bench.mjs shares, by hand: 3 +
// 7919*i mod 509 for a 512-token vocabulary is 3, 3+284, 3+59.
func TestPromptIDs(t *testing.T) {
	require.Equal(t, []int{3, 287, 62}, enginebench.PromptIDs(3, 512))
}

func TestConfigValidate(t *testing.T) {
	good := enginebench.DefaultConfig()
	good.Model = "m.gguf"
	require.NoError(t, good.Validate())
	for name, edit := range map[string]func(*enginebench.Config){
		"model":   func(c *enginebench.Config) { c.Model = "" },
		"rounds":  func(c *enginebench.Config) { c.Rounds = 0 },
		"prompt":  func(c *enginebench.Config) { c.PromptTokens = 0 },
		"gen":     func(c *enginebench.Config) { c.GenTokens = 0 },
		"threads": func(c *enginebench.Config) { c.Threads = 0 },
		"bw":      func(c *enginebench.Config) { c.BandwidthSize = -1 },
	} {
		c := good
		edit(&c)
		require.ErrorIs(t, c.Validate(), enginebench.ErrConfig, name)
	}
	c := good
	c.Threads = runtime.GOMAXPROCS(0) + 1
	_, err := enginebench.Run(context.Background(), c)
	require.ErrorIs(t, err, enginebench.ErrConfig)
}

// TestRunInterleavesAndRatios runs our engine on stories260K's GGUF file
// against a fake llama.cpp whose rounds report fixed figures, and checks
// one call per round, their medians, and that the ratios are ours over
// theirs.
func TestRunInterleavesAndRatios(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	cfg := enginebench.DefaultConfig()
	cfg.Model = dir + "/stories260K.gguf"
	cfg.Rounds, cfg.PromptTokens, cfg.GenTokens, cfg.BandwidthSize = 3, 8, 4, 0
	cfg.Threads = runtime.GOMAXPROCS(0)
	theirs := []llamabench.Result{{LoadS: 1, PrefillTokS: 100, DecodeTokS: 10}, {LoadS: 3, PrefillTokS: 300, DecodeTokS: 30}, {LoadS: 2, PrefillTokS: 200, DecodeTokS: 20}}
	calls := 0
	rep, err := enginebench.RunWith(context.Background(), cfg, func(_ context.Context, c llamabench.Config) (llamabench.Result, error) {
		require.Equal(t, cfg.PromptTokens, c.PromptTokens)
		require.Equal(t, cfg.Threads, c.Threads)
		calls++
		return theirs[calls-1], nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls)
	require.Len(t, rep.Swarm.Rounds, 3)
	require.Equal(t, enginebench.Figures{LoadS: 2, PrefillTokS: 200, DecodeTokS: 20}, rep.LlamaCpp.Median)
	s := rep.Swarm.Median
	require.Positive(t, s.DecodeTokS)
	require.InDelta(t, s.DecodeTokS/20, rep.Ratio.DecodeTokS, 1e-12)
	require.InDelta(t, s.PrefillTokS/200, rep.Ratio.PrefillTokS, 1e-12)
	require.InDelta(t, s.LoadS/2, rep.Ratio.LoadS, 1e-12)
}
