package blocks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gguf "github.com/gpustack/gguf-parser-go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// testTokens is a token sequence for logits comparisons (ids < 320).
var testTokens = []int{1, 300, 5, 17, 259, 260, 42, 311, 2, 100}

func smallConfig(dt swarm.DType) synth.Config {
	c := synth.DefaultConfig()
	c.Layers = 3
	c.Seed = 11
	c.DType = dt
	return c
}

// TestSynthFormatsAgree writes one synthesized model as an HF directory
// (single file and sharded), GGUF and llama2.c v0/v1 and requires identical
// logits from all of them: the weights are the same numbers in every file
// (f16/bf16 values widened exactly to float32 in llama2.c), the q/k rows are
// permuted by the writers the way llama.cpp's and llama2.c's converters do,
// and the kernels compute an f16 or bf16 row exactly as the f32 row of the
// same values.
func TestSynthFormatsAgree(t *testing.T) {
	for _, dt := range []swarm.DType{swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16} {
		t.Run(dt.String(), func(t *testing.T) {
			c := smallConfig(dt)
			paths := synthFiles(t, c)
			want := logitsOf(t, load(t, paths["hf"]), testTokens)
			for _, name := range []string{"hf-sharded", "gguf", "llama2c-v0", "llama2c-v1"} {
				l := load(t, paths[name])
				info := l.model.Info()
				require.Equal(t, c.Layers, info.NBlocks, name)
				require.Equal(t, c.Dim, info.DModel, name)
				require.Equal(t, c.Heads, info.NHeads, name)
				require.Equal(t, c.KVHeads, info.NKVHeads, name)
				require.Equal(t, c.FFN, info.FFNDim, name)
				require.Equal(t, c.Vocab, info.Vocab, name)
				got := logitsOf(t, l, testTokens)
				if dt == swarm.DTypeF16 && blocks.F16x8() && strings.HasPrefix(name, "llama2c") {
					// llama2.c files hold float32 weights: under f16x8 their
					// products sum otherwise than the binary16 ones (gemm_x8.go),
					// the same values to float32 rounding.
					requireLogitsClose(t, want, got, 1e-5, name)
					continue
				}
				require.Equal(t, want, got, name)
			}
		})
	}
}

// TestSynthQ8_0 compares a Q8_0 GGUF with the float32 llama2.c file of the
// same (dequantized) weights: the Q8_0 products round their inputs to 8
// bits per block of 32 as llama.cpp does (a relative error up to 1/254 a
// value, compounding over the blocks), so the logits (rms about 1) agree
// to 0.1 and an rms difference under 0.03 (measured: 0.026-0.051 and
// 0.010-0.016), the bounds the llama.cpp oracle sees for quantized types.
func TestSynthQ8_0(t *testing.T) {
	c := smallConfig(swarm.DTypeQ8_0)
	paths := synthFiles(t, c)
	q8 := load(t, paths["gguf"])
	require.Equal(t, swarm.DTypeQ8_0, q8.model.Info().DType)
	want := logitsOf(t, load(t, paths["llama2c-v0"]), testTokens)
	got := logitsOf(t, q8, testTokens)
	requireEightBitClose(t, want, got)
}

// requireLogitsClose requires every logit of got within tol (absolute) of
// want's, position by position.
func requireLogitsClose(t *testing.T, want, got [][]float32, tol float64, name string) {
	t.Helper()
	require.Len(t, got, len(want), name)
	for p := range want {
		require.Len(t, got[p], len(want[p]), name)
		for i := range want[p] {
			require.InDelta(t, want[p][i], got[p][i], tol, "%s: position %d logit %d", name, p, i)
		}
	}
}

// requireEightBitClose requires logits of a model whose products round
// their inputs to 8 bits (Q8_0, Q4_0..Q5_1, Q2_K..Q6_K with the VNNI kernels:
// q8act.go; other CPUs keep float32 inputs and are closer) within 0.1 of the float32
// ones and with an rms difference under 0.03 at every position.
func requireEightBitClose(t *testing.T, want, got [][]float32) {
	t.Helper()
	for i := range want {
		require.InDeltaSlice(t, want[i], got[i], 0.1, "position %d", i)
		var ss float64
		for j := range want[i] {
			ss += float64(want[i][j]-got[i][j]) * float64(want[i][j]-got[i][j])
		}
		require.Less(t, math.Sqrt(ss/float64(len(want[i]))), 0.03, "position %d: rms difference", i)
	}
}

// quantDTypes are GGML's quantized types besides Q8_0, and quantMixes the
// --dtype names of each file of them the tests write (q4_k_m: Q4_K and
// Q6_K matrices in one file).
var (
	quantDTypes = []swarm.DType{swarm.DTypeQ4_0, swarm.DTypeQ4_1, swarm.DTypeQ5_0, swarm.DTypeQ5_1,
		swarm.DTypeQ2_K, swarm.DTypeQ3_K, swarm.DTypeQ4_K, swarm.DTypeQ5_K, swarm.DTypeQ6_K,
		swarm.DTypeIQ4_NL, swarm.DTypeIQ4_XS}
	quantMixes = append(dtypeNames(quantDTypes), "q4_k_m")
)

func dtypeNames(dts []swarm.DType) []string {
	out := make([]string, len(dts))
	for i, d := range dts {
		out[i] = d.String()
	}
	return out
}

// quantConfig is smallConfig with the --dtype name (a dtype or a mix) and
// rows of 256 values (whole K-quant super-blocks).
func quantConfig(t *testing.T, name string) synth.Config {
	t.Helper()
	c := smallConfig(swarm.DTypeF32)
	var err error
	c.DType, c.Mix, err = synth.ParseDType(name)
	require.NoError(t, err)
	c.Dim, c.FFN = 256, 512
	return c
}

// TestSynthQuantized compares the GGUF file of each quantized type (and
// the q4_k_m mix) with the float32 llama2.c file of the same dequantized
// weights: the engine's block kernels (blocks/quant.go) read the blocks
// that synth's quantizers wrote, and synth's own dequantizers (written
// element by element, apart from the kernels) made the float32 file. They
// agree to float32 summation order, or (Q4_0..Q5_1 and Q2_K..Q6_K, which round
// their inputs to 8 bits) within requireEightBitClose.
func TestSynthQuantized(t *testing.T) {
	for _, name := range quantMixes {
		t.Run(name, func(t *testing.T) {
			c := quantConfig(t, name)
			paths := synthFiles(t, c)
			q := load(t, paths["gguf"])
			require.Equal(t, c.DType, q.model.Info().DType)
			want := logitsOf(t, load(t, paths["llama2c-v0"]), testTokens)
			got := logitsOf(t, q, testTokens)
			switch c.DType { // q4_0 .. q5_1, iq4_nl, iq4_xs, q2_k .. q6_k and q4_k_m: 8-bit activations
			case swarm.DTypeQ4_0, swarm.DTypeQ4_1, swarm.DTypeQ5_0, swarm.DTypeQ5_1, swarm.DTypeIQ4_NL, swarm.DTypeIQ4_XS, swarm.DTypeQ2_K, swarm.DTypeQ3_K, swarm.DTypeQ4_K, swarm.DTypeQ5_K, swarm.DTypeQ6_K:
				requireEightBitClose(t, want, got)
				return
			}
			for i := range want {
				require.InDeltaSlice(t, want[i], got[i], 0.02, "position %d", i)
			}
		})
	}
}

// TestEngineMatchesNaiveReference recomputes the synthesized model with a
// naive float64 implementation that works directly on the Hugging Face
// layout (rotate-half RoPE, transformers' modeling_llama) and compares the
// logits of the HF directory and the GGUF file with it. This checks the
// engine's math and the q/k permutation against an independent oracle.
func TestEngineMatchesNaiveReference(t *testing.T) {
	c := smallConfig(swarm.DTypeF32)
	c.Heads, c.KVHeads = 8, 2 // 4 query heads per KV head
	paths := synthFiles(t, c)
	want := naiveLogits(t, c, testTokens)
	for _, name := range []string{"hf", "gguf"} {
		got := logitsOf(t, load(t, paths[name]), testTokens)
		for i := range want {
			for j := range want[i] {
				require.InDelta(t, want[i][j], got[i][j], 1e-4, "%s: position %d logit %d", name, i, j)
			}
		}
	}
}

// naiveLogits is a direct float64 transcription of a Llama forward pass
// over HF-layout weights, one token at a time.
func naiveLogits(t *testing.T, c synth.Config, tokens []int) [][]float64 {
	get := func(name string) ([]float64, int, int) {
		v, rows, cols, err := synth.HFValues(c, name)
		require.NoError(t, err)
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out, rows, cols
	}
	matvec := func(w []float64, rows, cols int, x []float64) []float64 {
		y := make([]float64, rows)
		for r := range rows {
			for j := range cols {
				y[r] += w[r*cols+j] * x[j]
			}
		}
		return y
	}
	rmsnorm := func(x, w []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(len(x))+c.NormEps)
		out := make([]float64, len(x))
		for i := range x {
			out[i] = w[i] * x[i] * s
		}
		return out
	}
	hd := c.Dim / c.Heads
	ropeHF := func(v []float64, heads, pos int) {
		for h := range heads {
			x := v[h*hd : (h+1)*hd]
			for i := range hd / 2 {
				a := float64(pos) / math.Pow(c.RopeTheta, float64(2*i)/float64(hd))
				x1, x2 := x[i], x[i+hd/2]
				x[i] = x1*math.Cos(a) - x2*math.Sin(a)
				x[i+hd/2] = x2*math.Cos(a) + x1*math.Sin(a)
			}
		}
	}
	embed, _, _ := get("model.embed_tokens.weight")
	keys := make([][][]float64, c.Layers)
	vals := make([][][]float64, c.Layers)
	var out [][]float64
	for pos, tok := range tokens {
		x := append([]float64(nil), embed[tok*c.Dim:(tok+1)*c.Dim]...)
		for b := range c.Layers {
			p := fmt.Sprintf("model.layers.%d.", b)
			an, _, _ := get(p + "input_layernorm.weight")
			xb := rmsnorm(x, an)
			wq, qr, qc := get(p + "self_attn.q_proj.weight")
			wk, kr, kc := get(p + "self_attn.k_proj.weight")
			wv, vr, vc := get(p + "self_attn.v_proj.weight")
			q, k, v := matvec(wq, qr, qc, xb), matvec(wk, kr, kc, xb), matvec(wv, vr, vc, xb)
			ropeHF(q, c.Heads, pos)
			ropeHF(k, c.KVHeads, pos)
			keys[b] = append(keys[b], k)
			vals[b] = append(vals[b], v)
			att := make([]float64, c.Heads*hd)
			for h := range c.Heads {
				kvh := h / (c.Heads / c.KVHeads)
				scores := make([]float64, pos+1)
				m := math.Inf(-1)
				for j := range scores {
					for i := range hd {
						scores[j] += q[h*hd+i] * keys[b][j][kvh*hd+i]
					}
					scores[j] /= math.Sqrt(float64(hd))
					m = max(m, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - m)
					sum += scores[j]
				}
				for j := range scores {
					for i := range hd {
						att[h*hd+i] += scores[j] / sum * vals[b][j][kvh*hd+i]
					}
				}
			}
			wo, or, oc := get(p + "self_attn.o_proj.weight")
			for i, v := range matvec(wo, or, oc, att) {
				x[i] += v
			}
			fn, _, _ := get(p + "post_attention_layernorm.weight")
			xb = rmsnorm(x, fn)
			w1, r1, c1 := get(p + "mlp.gate_proj.weight")
			w3, r3, c3 := get(p + "mlp.up_proj.weight")
			w2, r2, c2 := get(p + "mlp.down_proj.weight")
			g, u := matvec(w1, r1, c1, xb), matvec(w3, r3, c3, xb)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			for i, v := range matvec(w2, r2, c2, g) {
				x[i] += v
			}
		}
		norm, _, _ := get("model.norm.weight")
		head, hr, hc := get("lm_head.weight")
		out = append(out, matvec(head, hr, hc, rmsnorm(x, norm)))
	}
	return out
}

// TestPartialLoadReadsOnlySpan loads a 2-block span of a synthesized
// 32-block model of every architecture through a byte-counting File and
// requires that exactly the bytes of those two blocks were read (the
// headers were read by Open) from every format (GGUF, Hugging Face one
// file and sharded, llama2.c), and that LoadHead reads exactly the
// embeddings, final norm and LM head (once when tied).
func TestPartialLoadReadsOnlySpan(t *testing.T) {
	for _, arch := range synth.Archs {
		c := synth.DefaultConfig()
		c.Arch = arch
		c.Layers = 32
		c.Dim, c.FFN, c.Heads, c.KVHeads = 32, 64, 4, 2
		c.DType = swarm.DTypeF16
		paths := synthFiles(t, c)
		for _, name := range []string{"hf", "hf-sharded", "gguf", "llama2c-v0", "llama2c-v1"} {
			if paths[name] == "" {
				continue // llama2.c holds llama and mistral only
			}
			t.Run(arch+"/"+name, func(t *testing.T) {
				counter := &byteCounter{counts: map[string]int64{}}
				m, err := blocks.Open(paths[name], blocks.WithOpenFile(counter.open))
				require.NoError(t, err)
				defer m.Close()
				info := m.Info()
				headers := counter.total()
				require.Less(t, headers, int64(64<<10), "Open should read only headers")
				perFile := counter.snapshot()

				e, err := m.LoadSpan(swarm.Span{Start: 5, End: 7})
				require.NoError(t, err)
				defer e.Close()
				spanBytes := counter.total() - headers
				if name == "hf-sharded" {
					// Blocks 5 and 6 lie in the first of two shards.
					after := counter.snapshot()
					second := filepath.Join(paths[name], "model-00002-of-00002.safetensors")
					require.Contains(t, after, second)
					require.Equal(t, perFile[second], after[second], "the second shard is not read")
				}
				require.Equal(t, 2*info.BlockBytes, spanBytes)
				require.Equal(t, 2*info.BlockBytes, e.WeightBytes())

				_, err = m.LoadHead()
				require.NoError(t, err)
				headBytes := counter.total() - headers - spanBytes
				elems := int64(info.Vocab * info.DModel)
				embedBytes := info.DType.Bytes(elems)
				if name != "gguf" && name != "hf" && name != "hf-sharded" {
					embedBytes = 4 * elems // llama2.c is float32
				}
				normBytes := int64(4 * info.DModel)
				if name == "hf" || name == "hf-sharded" {
					normBytes = info.DType.Bytes(int64(info.DModel))
				}
				tables := int64(2) // embedding + untied LM head
				if info.TiedEmbeddings {
					tables = 1
				}
				require.Equal(t, tables*embedBytes+normBytes, headBytes, "embedding, LM head, final norm: %d %d %+v", embedBytes, normBytes, info)
			})
		}
	}
}

// TestPartialLoadQuantized is TestPartialLoadReadsOnlySpan for quantized
// GGUF files, the expected byte counts taken from gguf-parser-go's tensor
// infos: a Q4_K_M file, whose blocks differ (use_more_bits gives block 6
// of 32 Q6_K attn_v and ffn_down, block 5 none), so s_m (BlockBytes) is
// the largest block, and a Q4_0 file. Loading blocks 5 and 6 reads exactly
// their tensors; LoadHead exactly the embedding (Q4_K or Q4_0), the final
// norm (F32) and the LM head (Q6_K or Q4_0).
func TestPartialLoadQuantized(t *testing.T) {
	for _, name := range []string{"q4_k_m", "q4_0"} {
		t.Run(name, func(t *testing.T) {
			c := quantConfig(t, name)
			c.Layers, c.FFN = 32, 256
			path := filepath.Join(t.TempDir(), "model.gguf")
			require.NoError(t, synth.WriteGGUF(path, c))
			gf, err := gguf.ParseGGUFFile(path)
			require.NoError(t, err)
			blockBytes := make([]int64, c.Layers)
			var head int64
			for _, ti := range gf.TensorInfos {
				var b int
				if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &b); err == nil {
					blockBytes[b] += int64(ti.Bytes())
				} else {
					head += int64(ti.Bytes())
				}
			}
			if name == "q4_k_m" {
				require.Greater(t, blockBytes[6], blockBytes[5], "block 6 holds Q6_K tensors")
			}

			counter := &byteCounter{counts: map[string]int64{}}
			m, err := blocks.Open(path, blocks.WithOpenFile(counter.open))
			require.NoError(t, err)
			defer m.Close()
			require.Equal(t, slices.Max(blockBytes), m.Info().BlockBytes, "s_m is the largest block")
			headers := counter.total()
			e, err := m.LoadSpan(swarm.Span{Start: 5, End: 7})
			require.NoError(t, err)
			defer e.Close()
			span := counter.total() - headers
			require.Equal(t, blockBytes[5]+blockBytes[6], span)
			require.Equal(t, span, e.WeightBytes())
			_, err = m.LoadHead()
			require.NoError(t, err)
			require.Equal(t, head, counter.total()-headers-span, "embedding, final norm, LM head")
		})
	}
}

// TestSpanChainEqualsWhole runs the model as two engines over [0, 1) and
// [1, 3) in a chain and requires the same hidden states as one engine over
// [0, 3), and the same from a session over a sub-span of a larger engine.
func TestSpanChainEqualsWhole(t *testing.T) {
	c := smallConfig(swarm.DTypeF16)
	paths := synthFiles(t, c)
	m, err := blocks.Open(paths["gguf"])
	require.NoError(t, err)
	defer m.Close()
	whole, err := m.LoadSpan(swarm.Span{Start: 0, End: 3})
	require.NoError(t, err)
	first, err := m.LoadSpan(swarm.Span{Start: 0, End: 1})
	require.NoError(t, err)
	head, err := m.LoadHead()
	require.NoError(t, err)
	x, err := head.Embed(testTokens)
	require.NoError(t, err)
	n := len(testTokens)

	sw, err := whole.NewSession(whole.Span(), n)
	require.NoError(t, err)
	want, err := sw.Forward(context.Background(), 0, x, n)
	require.NoError(t, err)

	s1, err := first.NewSession(first.Span(), n)
	require.NoError(t, err)
	s2, err := whole.NewSession(swarm.Span{Start: 1, End: 3}, n)
	require.NoError(t, err)
	h, err := s1.Forward(context.Background(), 0, x, n)
	require.NoError(t, err)
	got, err := s2.Forward(context.Background(), 0, h, n)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestHFTokenizerFiles loads the head of a synthesized HF directory with its
// tokenizer.model, and again with only its tokenizer.json: both encode and
// decode text alike, and the GGUF and llama2.c tokenizers agree with them.
func TestHFTokenizerFiles(t *testing.T) {
	c := smallConfig(swarm.DTypeF32)
	paths := synthFiles(t, c)
	encode := func(path string, opts ...blocks.Option) []int {
		m, err := blocks.Open(path, opts...)
		require.NoError(t, err)
		defer m.Close()
		h, err := m.LoadHead()
		require.NoError(t, err)
		tok := h.Tokenizer()
		require.NotNil(t, tok, path)
		ids, err := tok.Encode("the rain in ßpain", true)
		require.NoError(t, err)
		return ids
	}
	want := encode(paths["hf"])
	require.Equal(t, 1, want[0])
	require.Greater(t, len(want), 4)
	require.Equal(t, want, encode(paths["gguf"]))
	require.Equal(t, want, encode(paths["llama2c-v0"]))
	require.Equal(t, want, encode(paths["hf"], blocks.WithTokenizer(filepath.Join(paths["hf"], "tokenizer.json"))))
	require.NoError(t, os.Remove(filepath.Join(paths["hf"], "tokenizer.model")))
	require.Equal(t, want, encode(paths["hf"]))
}

// TestHFRopeScalingConfig reads rope_scaling from config.json (Llama 3.1
// style) into ModelInfo, and the scaled model computes different logits.
func TestHFRopeScalingConfig(t *testing.T) {
	c := smallConfig(swarm.DTypeF32)
	paths := synthFiles(t, c)
	plain := logitsOf(t, load(t, paths["hf"]), testTokens)
	cfgPath := filepath.Join(paths["hf"], "config.json")
	raw, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	cfg["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
		"high_freq_factor": 4.0, "original_max_position_embeddings": 8}
	cfg["eos_token_id"] = []int{2, 7}
	raw, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, raw, 0o644))
	l := load(t, paths["hf"])
	info := l.model.Info()
	require.Equal(t, &swarm.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8}, info.RopeScaling)
	require.Equal(t, 2, info.EOS, "the first of a list of EOS ids")
	scaled := logitsOf(t, l, testTokens)
	require.Equal(t, plain[0], scaled[0], "position 0 is not rotated")
	require.NotEqual(t, plain[len(plain)-1], scaled[len(scaled)-1])
}
