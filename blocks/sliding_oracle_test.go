package blocks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/swarm"
)

// TestSlidingWindowLlamaCpp compares swarm's sliding-window attention over
// ring caches with llama.cpp's (node-llama-cpp 3.22.1, f32 weights and
// KV cache, flash attention off), the external oracle: a gemma3 model of
// 6 blocks (5 local with a 4-token window, then a global one: llama.cpp's
// Gemma 3 pattern) and a 130-token sequence, decoded one token at a time
// through rings of 4 + swarm.SlidingRewind = 68 positions, so the rings
// wrap about twice. At several positions the next-token distributions
// (softmax of the logits over the whole vocabulary) must agree within
// 1e-4 and have the same most likely token. Measured: at most 1.2e-5
// (llama.cpp rounds inside its kernels, e.g. GELU); a window one position
// too long gives 2e-2 and another most likely token.
func TestSlidingWindowLlamaCpp(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (CI installs it; see .ci/run)")
	}
	dir := filepath.Join(testenv.RepoRoot(t), "clients", "js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-llama-cpp", "package.json")); err != nil {
		t.Skipf("node-llama-cpp is not installed: run npm install in clients/js (%v)", err)
	}
	c := archConfig(synth.ArchGemma3, swarm.DTypeF32)
	c.Layers, c.SlidingWindow, c.SlidingPattern, c.MaxSeqLen = 6, 4, 6, 256
	path := filepath.Join(t.TempDir(), "gemma3.gguf")
	require.NoError(t, synth.WriteGGUF(path, c))
	const n = 130
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (7*i + 3) % c.Vocab
	}
	lens := []int{5, 20, 69, 100, 130}
	idsJSON, err := json.Marshal(ids)
	require.NoError(t, err)
	lensJSON, err := json.Marshal(lens)
	require.NoError(t, err)
	var want map[string][]float64
	testenv.NodeOracle(t, "sliding_oracle.mjs", nil, &want, path, string(idsJSON), string(lensJSON))

	l := load(t, path)
	info := l.model.Info()
	require.Less(t, info.CacheTokens(0, n), n, "block 0 has a ring cache")
	// Single-token decode from the start, and a 100-token prefill (longer
	// than the rings) then decode.
	for _, first := range []int{1, 100} {
		s, err := l.engine.NewSession(info.Blocks(), n)
		require.NoError(t, err)
		d := info.DModel
		for pos := 0; pos < n; {
			k := 1
			if pos == 0 {
				k = first
			}
			x, err := l.head.Embed(ids[pos : pos+k])
			require.NoError(t, err)
			y, err := s.Forward(context.Background(), pos, x, k)
			require.NoError(t, err)
			for t0 := range k {
				L := pos + t0 + 1
				p, ok := want[strconv.Itoa(L)]
				if !ok {
					continue
				}
				logits, err := l.head.Logits(y[t0*d : (t0+1)*d])
				require.NoError(t, err)
				got := softmax64(logits)
				require.Len(t, p, len(got))
				worst := 0.0
				for i := range got {
					worst = max(worst, math.Abs(got[i]-p[i]))
				}
				t.Logf("first step %d tokens, prefix %d: max |p_swarm - p_llama.cpp| = %.3g", first, L, worst)
				require.Less(t, worst, 1e-4, "prefix %d", L)
				require.Equal(t, argmax(p), argmax(got), fmt.Sprintf("prefix %d: most likely token", L))
			}
			pos += k
		}
		require.NoError(t, s.Close())
	}
}

// softmax64 is softmax(x) in float64.
func softmax64(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	out := make([]float64, len(x))
	sum := 0.0
	for i, v := range x {
		out[i] = math.Exp(float64(v) - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// argmax is the index of the largest value (the first of equals).
func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
