package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// skipWithoutLlamaCpp skips the test when node or node-llama-cpp (pinned
// in clients/js; CI installs it, see .ci/run) is absent.
func skipWithoutLlamaCpp(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (CI installs it; see .ci/run)")
	}
	pkg := filepath.Join(testenv.RepoRoot(t), "clients", "js", "node_modules", "node-llama-cpp", "package.json")
	if _, err := os.Stat(pkg); err != nil {
		t.Skipf("node-llama-cpp is not installed (npm ci in clients/js): %v", err)
	}
}

// synthTinyQ8 writes a 2-block Q8_0 GGUF model (d 256, ffn 704, 8 heads,
// 4 KV heads, vocabulary 512) with `swarm model synth` and returns its path.
func synthTinyQ8(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	_, errOut, code := runSwarmProcess(t, "model", "synth", "--layers", "2", "--dim", "256", "--ffn", "704",
		"--heads", "8", "--kv-heads", "4", "--vocab", "512", "--dtype", "q8_0", "--formats", "gguf", "--out", dir, "--name", "tiny")
	require.Zero(t, code, errOut)
	return filepath.Join(dir, "tiny.gguf")
}

// engineJSON is one engine's part of `swarm bench local --json`.
type engineJSON struct {
	Engine string            `json:"engine"`
	Rounds []json.RawMessage `json:"rounds"`
	Median struct {
		LoadS             float64 `json:"load_s"`
		PrefillTokS       float64 `json:"prefill_tok_s"`
		DecodeTokS        float64 `json:"decode_tok_s"`
		BandwidthFraction float64 `json:"bandwidth_fraction"`
	} `json:"median"`
}

// TestBenchLocalVsLlamaCpp runs `swarm bench local --vs-llama-cpp
// --rounds 1` on a tiny synthesized Q8_0 GGUF and checks that both engines
// report positive load, prefill and decode figures and that the weight
// bytes per token are the file's: 2 blocks of d 256, ffn 704, 4 of 8
// heads for K and V (kv dim 128) and a vocabulary of 512, in Q8_0 (34
// bytes per 32 values), plus f32 norms. By hand: per block the matrices
// hold 256*(256+128+128+256) + 3*256*704 = 196608 + 540672 = 737280
// values, 783360 bytes as Q8_0, and two f32 norms 2048 bytes; the LM head
// 512*256 values is 139264 bytes and the final norm 1024: 2*(783360+2048)
// + 139264 + 1024 = 1711104.
func TestBenchLocalVsLlamaCpp(t *testing.T) {
	skipWithoutLlamaCpp(t)
	out, errOut, code := runSwarmProcess(t, "bench", "local", "--model", synthTinyQ8(t),
		"--vs-llama-cpp", "--rounds", "1", "--prompt-tokens", "8", "--gen-tokens", "4", "--threads", "1",
		"--bandwidth-size", "16MiB", "--json")
	require.Zero(t, code, errOut)
	var rep struct {
		WeightBytesPerToken int64              `json:"weight_bytes_per_token"`
		BandwidthGBs        float64            `json:"bandwidth_gb_s"`
		Swarm               engineJSON         `json:"swarm"`
		LlamaCpp            engineJSON         `json:"llama_cpp"`
		Ratio               map[string]float64 `json:"ratio"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, int64(1711104), rep.WeightBytesPerToken)
	require.Positive(t, rep.BandwidthGBs)
	for _, e := range []string{"swarm", "llama.cpp"} {
		eng := rep.Swarm
		if e == "llama.cpp" {
			eng = rep.LlamaCpp
		}
		require.Equal(t, e, eng.Engine)
		require.Len(t, eng.Rounds, 1, e)
		require.Positive(t, eng.Median.LoadS, e)
		require.Positive(t, eng.Median.PrefillTokS, e)
		require.Positive(t, eng.Median.DecodeTokS, e)
		require.Positive(t, eng.Median.BandwidthFraction, e)
	}
	for _, k := range []string{"load_s", "prefill_tok_s", "decode_tok_s"} {
		require.Positive(t, rep.Ratio[k], k)
	}
}

// TestBenchServerVsLlamaCpp runs `swarm bench server --vs-llama-cpp` on the
// tiny model served whole and checks each concurrency row carries
// llama.cpp's aggregate tok/s with N sequences and the ratio ours/theirs.
func TestBenchServerVsLlamaCpp(t *testing.T) {
	skipWithoutLlamaCpp(t)
	out, errOut, code := runSwarmProcess(t, "bench", "server", "--model", synthTinyQ8(t), "--blocks", "0:2",
		"--concurrency", "1,2", "--tokens", "4", "--prefill", "0", "--vs-llama-cpp", "--measure-cache", t.TempDir(), "--json")
	require.Zero(t, code, errOut)
	var rep struct {
		Results []struct {
			Concurrency   int     `json:"concurrency"`
			AggregateTokS float64 `json:"aggregate_tok_s"`
			LlamaCppTokS  float64 `json:"llama_cpp_aggregate_tok_s"`
			Ratio         float64 `json:"ratio_vs_llama_cpp"`
		} `json:"results"`
		LlamaCpp struct {
			Sequences []struct {
				Sequences     int     `json:"sequences"`
				AggregateTokS float64 `json:"aggregate_tok_s"`
			} `json:"sequences"`
		} `json:"llama_cpp"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Results, 2)
	require.Len(t, rep.LlamaCpp.Sequences, 2)
	for i, r := range rep.Results {
		require.Equal(t, []int{1, 2}[i], r.Concurrency)
		require.Equal(t, r.Concurrency, rep.LlamaCpp.Sequences[i].Sequences)
		require.Positive(t, r.LlamaCppTokS)
		require.InDelta(t, rep.LlamaCpp.Sequences[i].AggregateTokS, r.LlamaCppTokS, 0)
		require.InDelta(t, r.AggregateTokS/r.LlamaCppTokS, r.Ratio, 1e-9*r.Ratio)
	}
}

// --cpuprofile writes a complete profile (gzip-compressed, as pprof writes
// it) also when the benchmark fails.
func TestBenchCPUProfileOnFailure(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	_, stderr, code := runSwarm(t, "bench", "server", "--model", filepath.Join(t.TempDir(), "missing.gguf"), "--blocks", "0:1", "--cpuprofile", prof)
	require.NotZero(t, code)
	require.Contains(t, stderr, "missing.gguf")
	raw, err := os.ReadFile(prof)
	require.NoError(t, err)
	require.Greater(t, len(raw), 2, "the profile was stopped and flushed")
	require.Equal(t, []byte{0x1f, 0x8b}, raw[:2], "gzip header of a pprof profile")
}
