package serverbench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/server/serverbench"
	"github.com/swarmllm/swarm/swarm"
)

func TestParseConcurrency(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"1,4,16", []int{1, 4, 16}, true},
		{" 2 , 8", []int{2, 8}, true},
		{"1,,4", nil, false},
		{"0", nil, false},
		{"x", nil, false},
	} {
		got, err := serverbench.ParseConcurrency(tc.in)
		if !tc.ok {
			require.ErrorIs(t, err, serverbench.ErrConfig, tc.in)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := serverbench.DefaultConfig()
	good.Model, good.Blocks = "m.gguf", swarm.Span{Start: 0, End: 1}
	require.NoError(t, good.Validate())
	for name, edit := range map[string]func(*serverbench.Config){
		"model":       func(c *serverbench.Config) { c.Model = "" },
		"blocks":      func(c *serverbench.Config) { c.Blocks = swarm.Span{} },
		"concurrency": func(c *serverbench.Config) { c.Concurrency = []int{4, 0} },
		"tokens":      func(c *serverbench.Config) { c.Tokens = 0 },
		"prompt":      func(c *serverbench.Config) { c.Prompt = 0 },
		"warmup":      func(c *serverbench.Config) { c.Warmup = -1 },
		"prefill":     func(c *serverbench.Config) { c.Prefill = -1 },
	} {
		c := good
		edit(&c)
		require.ErrorIs(t, c.Validate(), serverbench.ErrConfig, name)
	}
}

// TestFLOPsPerToken checks the count for a 7B-shaped block: 2 * (4 * 4096^2
// + 3 * 4096 * 11008) = 404,750,336 FLOPs.
func TestFLOPsPerToken(t *testing.T) {
	info := swarm.ModelInfo{DModel: 4096, NHeads: 32, NKVHeads: 32, HeadDim: 128, FFNDim: 11008}
	require.InDelta(t, 404750336.0, serverbench.FLOPsPerToken(info, 1), 0)
	require.InDelta(t, 4*404750336.0, serverbench.FLOPsPerToken(info, 4), 0)
}

// TestRun runs a small bench on stories260K and checks the report's shape.
func TestRun(t *testing.T) {
	cfg := serverbench.DefaultConfig()
	cfg.Model = testenv.SharedFile(t, "models", "stories260K", "stories260K.bin")
	cfg.Blocks = swarm.Span{Start: 0, End: 5}
	cfg.Concurrency, cfg.Tokens, cfg.Prefill = []int{1, 3}, 4, 16
	cfg.MeasureCacheDir = t.TempDir()
	rep, err := serverbench.Run(context.Background(), cfg, nil)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	for i, r := range rep.Results {
		require.Equal(t, cfg.Concurrency[i], r.Concurrency)
		require.Positive(t, r.AggregateTokS)
		require.Positive(t, r.TPOT)
		require.Positive(t, r.GFLOPs)
	}
	require.NotNil(t, rep.Prefill)
	require.Equal(t, 16, rep.Prefill.Tokens)
	require.Positive(t, rep.Prefill.Speedup)

	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	var doc struct {
		Results []map[string]float64 `json:"results"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	require.Len(t, doc.Results, 2)
	for _, k := range []string{"concurrency", "aggregate_tok_s", "tpot_s", "gflops"} {
		require.Contains(t, doc.Results[0], k)
	}
	buf.Reset()
	require.NoError(t, rep.WriteTable(&buf))
	require.Contains(t, buf.String(), "aggregate tok/s")
	require.Equal(t, "cpu", rep.Device)
	require.Positive(t, rep.PeakGFLOPs)
	require.Contains(t, buf.String(), "device cpu;")
	require.Regexp(t, `\n\s+1\s+\S+\s+\S+\s+\S+\s+\d+%`, buf.String(), "the CPU row gives its fraction of the peak")
}

// otherDevice is the CPU backend under another name: a server on a device
// that is not the CPU, as far as the bench can tell.
type otherDevice struct{ blocks.Backend }

func (otherDevice) Name() string { return "bench-other-device" }

// registerOtherDevice registers otherDevice once per process (-count N runs
// the test N times; a name registers only once).
var registerOtherDevice = sync.OnceValue(func() error {
	cpu, err := blocks.LookupBackend(blocks.CPUBackendName)
	if err != nil {
		return err
	}
	return blocks.RegisterBackend(otherDevice{cpu})
})

// TestRunOtherDeviceHasNoCPUPeak runs the bench on a backend other than
// "cpu": the CPU's multiply-add peak bounds none of its figures, so the
// report has none (no peak_gflops in the JSON, "-" for "of peak").
func TestRunOtherDeviceHasNoCPUPeak(t *testing.T) {
	require.NoError(t, registerOtherDevice())
	cfg := serverbench.DefaultConfig()
	cfg.Model = testenv.SharedFile(t, "models", "stories260K", "stories260K.bin")
	cfg.Blocks = swarm.Span{Start: 0, End: 5}
	cfg.Device = "bench-other-device"
	cfg.Concurrency, cfg.Tokens, cfg.Prefill = []int{1}, 2, 4
	cfg.MeasureCacheDir = t.TempDir()
	rep, err := serverbench.Run(context.Background(), cfg, nil)
	require.NoError(t, err)
	require.Equal(t, "bench-other-device", rep.Device)
	require.Zero(t, rep.PeakGFLOPs)

	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	require.NotContains(t, doc, "peak_gflops")
	require.Equal(t, "bench-other-device", doc["device"])
	buf.Reset()
	require.NoError(t, rep.WriteTable(&buf))
	require.Contains(t, buf.String(), "device bench-other-device;")
	require.NotContains(t, buf.String(), "(swarm bench flops)")
	require.NotContains(t, buf.String(), "%")
}

// TestRunVsLlamaCppNeedsWholeModel checks --vs-llama-cpp refuses a span
// that is not the whole model (stories260K has 5 blocks) before measuring.
func TestRunVsLlamaCppNeedsWholeModel(t *testing.T) {
	cfg := serverbench.DefaultConfig()
	cfg.Model = testenv.SharedFile(t, "models", "stories260K", "stories260K.bin")
	cfg.Blocks = swarm.Span{Start: 0, End: 4}
	cfg.LlamaBench = "llama_bench.mjs"
	cfg.MeasureCacheDir = t.TempDir()
	_, err := serverbench.Run(context.Background(), cfg, nil)
	require.ErrorIs(t, err, serverbench.ErrConfig)
	require.ErrorContains(t, err, "want 0:5")
}
