package parity_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/parity"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/swarm"
)

// openSynth writes parity's tiny model of arch and dtype and opens it.
func openSynth(t *testing.T, arch, dtype string) *blocks.Model {
	t.Helper()
	path, err := parity.SynthModel(t.TempDir(), arch, dtype, 7)
	require.NoError(t, err)
	m, err := blocks.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func f16Cache(t *testing.T) blocks.Backend {
	t.Helper()
	b, err := blocks.WithCacheDType(blocks.CPU(), swarm.DTypeF16)
	require.NoError(t, err)
	return b
}

// TestParityCompareCPUAgainstItself: the CPU backend against itself
// computes the same bits, so every error is exactly 0, replay and batch are exact, and
// the bound is the tightest one.
func TestParityCompareCPUAgainstItself(t *testing.T) {
	for _, tc := range []struct{ arch, dtype, fileArch string }{
		{synth.ArchLlama, "f32", "llama"},
		{synth.ArchQwen2, "bf16", "qwen2"},
		{synth.ArchQwen3, "q8_0", "qwen3"},
		{synth.ArchGemma3, "f16", "gemma3"},
		{synth.ArchMistral, "q4_k_m", "llama"}, // GGUF names mistral llama
	} {
		t.Run(tc.arch+"/"+tc.dtype, func(t *testing.T) {
			m := openSynth(t, tc.arch, tc.dtype)
			rep, err := parity.Compare(context.Background(), blocks.CPU(), blocks.CPU(), m, parity.DefaultOptions())
			require.NoError(t, err)
			require.Zero(t, rep.MaxAbsErr)
			require.Zero(t, rep.MaxRelErr)
			require.Len(t, rep.Steps, 1+5)
			require.Equal(t, parity.StepError{Pos: 0, Tokens: 7, RefMaxAbs: rep.Steps[0].RefMaxAbs}, rep.Steps[0])
			require.Positive(t, rep.Steps[0].RefMaxAbs)
			require.Equal(t, 11, rep.Steps[5].Pos)
			require.True(t, rep.ReplayExact)
			require.NotNil(t, rep.BatchExact)
			require.True(t, *rep.BatchExact)
			require.Equal(t, "exact", rep.BatchText())
			require.Equal(t, parity.BoundF32, rep.Bound)
			require.True(t, rep.Pass, "%v", rep.Failures)
			require.Empty(t, rep.Failures)
			require.Equal(t, tc.fileArch, rep.Arch)
			require.Equal(t, swarm.DTypeF32, rep.CandCacheDType)
		})
	}
}

// TestParityCompareF16Cache: f16 attention caches round K and V, so the
// outputs differ from the f32 caches' by a little, inside BoundF16 (BoundQuant on
// quantized weights), and a bound of 1e-12 turns the same comparison into
// a failure.
func TestParityCompareF16Cache(t *testing.T) {
	for _, tc := range []struct {
		arch, dtype string
		bound       float64
	}{
		{synth.ArchLlama, "f32", parity.BoundF16},
		{synth.ArchQwen3, "f16", parity.BoundF16},
		{synth.ArchGemma3, "f32", parity.BoundF16},
		{synth.ArchQwen2, "q8_0", parity.BoundQuant},
	} {
		t.Run(tc.arch+"/"+tc.dtype, func(t *testing.T) {
			m := openSynth(t, tc.arch, tc.dtype)
			ctx := context.Background()
			rep, err := parity.Compare(ctx, blocks.CPU(), f16Cache(t), m, parity.DefaultOptions())
			require.NoError(t, err)
			require.Equal(t, tc.bound, rep.Bound)
			require.Equal(t, swarm.DTypeF16, rep.CandCacheDType)
			require.Equal(t, swarm.DTypeF32, rep.RefCacheDType)
			require.Positive(t, rep.MaxAbsErr)
			require.Positive(t, rep.MaxRelErr)
			require.LessOrEqual(t, rep.MaxRelErr, rep.Bound)
			require.True(t, rep.ReplayExact)
			require.True(t, *rep.BatchExact)
			require.True(t, rep.Pass, "%v", rep.Failures)

			opts := parity.DefaultOptions()
			opts.Bound = 1e-12
			rep, err = parity.Compare(ctx, blocks.CPU(), f16Cache(t), m, opts)
			require.NoError(t, err)
			require.Equal(t, 1e-12, rep.Bound)
			require.False(t, rep.Pass)
			require.Len(t, rep.Failures, 1)
			require.Contains(t, rep.Failures[0], "exceeds the bound")
			require.True(t, rep.ReplayExact, "the bound does not touch the exactness checks")
		})
	}
}

// TestParityCompareOptions: the run's shape follows the options (a replay
// reaching into the prefill, no decode steps), the report encodes as
// JSON with its documented keys, and bad options are refused.
func TestParityCompareOptions(t *testing.T) {
	m := openSynth(t, synth.ArchGemma3, "f32")
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		opts   parity.Options
		steps  int
		errMsg string
	}{
		{"replay into the prefill", parity.Options{Seed: 3, Prefill: 5, Decode: 1, Replay: 4}, 2, ""},
		{"prefill only", parity.Options{Seed: 3, Prefill: 9, Replay: 9}, 1, ""},
		{"no replay", parity.Options{Seed: 3, Prefill: 2, Decode: 2}, 3, ""},
		{"no prefill", parity.Options{Prefill: 0, Decode: 2}, 0, "prefill 0"},
		{"replay too long", parity.Options{Prefill: 2, Decode: 2, Replay: 5}, 0, "replay 5"},
		{"negative bound", parity.Options{Prefill: 2, Bound: -1}, 0, "bound -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := parity.Compare(ctx, blocks.CPU(), f16Cache(t), m, tc.opts)
			if tc.errMsg != "" {
				require.ErrorIs(t, err, parity.ErrOptions)
				require.ErrorContains(t, err, tc.errMsg)
				return
			}
			require.NoError(t, err)
			require.Len(t, rep.Steps, tc.steps)
			require.True(t, rep.Pass, "%v", rep.Failures)
			raw, err := json.Marshal(rep)
			require.NoError(t, err)
			var keys map[string]any
			require.NoError(t, json.Unmarshal(raw, &keys))
			for _, k := range []string{"model", "arch", "dtype", "ref_cache_dtype", "cand_cache_dtype", "steps",
				"max_abs_err", "max_rel_err", "bound", "replay_exact", "batch_exact", "pass"} {
				require.Contains(t, keys, k)
			}
			require.Equal(t, "f16", keys["cand_cache_dtype"])
		})
	}
}

// TestParityDefaultBound is the bound table: exactness for the same
// backend, BoundF16 where a side rounds to binary16, BoundQuant for quantized
// weights computed differently.
func TestParityDefaultBound(t *testing.T) {
	cpu, half := blocks.CPU(), f16Cache(t)
	for _, tc := range []struct {
		name      string
		weights   swarm.DType
		ref, cand blocks.Backend
		want      float64
	}{
		{"same backend f32", swarm.DTypeF32, cpu, cpu, parity.BoundF32},
		{"same backend quantized", swarm.DTypeQ4_K, cpu, cpu, parity.BoundF32},
		{"both f16 caches", swarm.DTypeQ8_0, half, half, parity.BoundF32},
		{"f16 cache candidate", swarm.DTypeF32, cpu, half, parity.BoundF16},
		{"f16 cache reference", swarm.DTypeBF16, half, cpu, parity.BoundF16},
		{"f16 cache quantized", swarm.DTypeQ8_0, cpu, half, parity.BoundQuant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, parity.DefaultBound(tc.weights, tc.ref, tc.cand))
		})
	}
}

// TestParityGreedyStories260K: greedy generation on stories260K gives the
// same ids on the CPU backend with f32 and with f16 caches.
func TestParityGreedyStories260K(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	m, err := blocks.Open(filepath.Join(dir, "stories260K.bin"), blocks.WithTokenizer(filepath.Join(dir, "tok512.bin")))
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cand blocks.Backend
	}{
		{"cpu", blocks.CPU()},
		{"cpu f16 cache", f16Cache(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := parity.Greedy(ctx, blocks.CPU(), tc.cand, m, "Once upon a time", 48)
			require.NoError(t, err)
			require.True(t, rep.Pass, "first difference at %d:\n%s\n%s", rep.FirstDiff, rep.RefText, rep.CandText)
			require.Equal(t, -1, rep.FirstDiff)
			require.NotEmpty(t, rep.RefIDs)
			require.Equal(t, rep.RefIDs, rep.CandIDs)
			require.Equal(t, rep.RefText, rep.CandText)
		})
	}
	_, err = parity.Greedy(ctx, blocks.CPU(), blocks.CPU(), m, "Once", 0)
	require.ErrorIs(t, err, parity.ErrOptions)
}

// TestParitySynthConfig: every architecture and dtype the doctor asks for
// makes a valid model; unknown names are refused.
func TestParitySynthConfig(t *testing.T) {
	for _, arch := range synth.Archs {
		for _, dt := range parity.SynthDTypes {
			_, err := parity.SynthConfig(arch, dt, 1)
			require.NoError(t, err, "%s %s", arch, dt)
		}
	}
	_, err := parity.SynthConfig("gpt2", "f32", 1)
	require.ErrorIs(t, err, synth.ErrConfig)
	_, err = parity.SynthConfig("llama", "q9_9", 1)
	require.ErrorIs(t, err, synth.ErrConfig)
}
