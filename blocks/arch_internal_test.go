package blocks

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPatternOf turns transformers' layer_types lists into a
// SlidingPattern and refuses lists that do not repeat one pattern.
func TestPatternOf(t *testing.T) {
	s, f := "sliding_attention", "full_attention"
	for _, c := range []struct {
		name  string
		types []string
		want  int
		err   string
	}{
		{"gemma3 1B head", []string{s, s, s, s, s, f, s, s, s, s, s, f, s}, 6, ""},
		{"every other", []string{s, f, s, f}, 2, ""},
		{"all global", []string{f, f, f}, 1, ""},
		{"all sliding", []string{s, s, s}, 0, ""},
		{"irregular", []string{s, f, s, s, f}, 0, `layer_types[3] = "sliding_attention", want "full_attention"`},
		{"unknown type", []string{s, "chunked_attention"}, 0, `layer_types[1] = "chunked_attention"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := patternOf(c.types)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

// TestArchTable checks the registry: every family is found by its GGUF
// and Hugging Face names, and the Llama families keep llama.cpp's
// adjacent-pair q/k rows while the NeoX ones do not.
func TestArchTable(t *testing.T) {
	for _, c := range []struct {
		gguf, hfType, hfClass, want string
		neox                        bool
	}{
		{"llama", "llama", "LlamaForCausalLM", "llama", false},
		{"", "mistral", "MistralForCausalLM", "mistral", false},
		{"qwen2", "qwen2", "Qwen2ForCausalLM", "qwen2", true},
		{"qwen3", "qwen3", "Qwen3ForCausalLM", "qwen3", true},
		{"gemma3", "gemma3_text", "Gemma3ForCausalLM", "gemma3", true},
	} {
		t.Run(c.want, func(t *testing.T) {
			if c.gguf != "" {
				a, err := archForGGUF(c.gguf)
				require.NoError(t, err)
				require.Equal(t, c.want, a.name)
				require.Equal(t, c.neox, a.ggufNeoX)
			}
			a, err := archForHF(c.hfType, nil)
			require.NoError(t, err)
			require.Equal(t, c.want, a.name)
			a, err = archForHF("", []string{c.hfClass})
			require.NoError(t, err)
			require.Equal(t, c.want, a.name)
		})
	}
	_, err := archForGGUF("mistral")
	require.ErrorContains(t, err, "not supported")
}

// TestGemma3TextConfigDefaults reads the text_config of Gemma 3 4B's
// published config.json, which names only what differs from transformers'
// Gemma3TextConfig defaults, and checks the 4B shape (8 heads, 4 KV
// heads of 256, vocab 262208) and RoPE of the model card.
func TestGemma3TextConfigDefaults(t *testing.T) {
	outer := hfConfig{ModelType: "gemma3", EOSTokenID: []byte("[1, 106]"), TextConfig: []byte(`{
		"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
		"num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}`)}
	c, err := gemma3TextConfig(outer)
	require.NoError(t, err)
	require.Equal(t, "gemma3_text", c.ModelType)
	require.Equal(t, []int{2560, 10240, 34, 8, 4, 256, 262208, 6}, []int{c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers,
		c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.VocabSize, c.SlidingWindowPattern})
	require.Equal(t, 1024, *c.SlidingWindow)
	require.Equal(t, []float64{1e6, 10000, 256, 1e-6}, []float64{c.RopeTheta, c.RopeLocalBaseFreq, c.QueryPreAttnScalar, c.RMSNormEps})
	require.Equal(t, &hfRopeScaling{RopeType: "linear", Factor: 8}, c.RopeScaling)
	require.Equal(t, 2, tokenID(c.BOSTokenID, 0))
	require.Equal(t, 1, tokenID(c.EOSTokenID, 0))
	_, err = gemma3TextConfig(hfConfig{TextConfig: []byte(`{"model_type": "siglip"}`)})
	require.ErrorContains(t, err, `model_type "siglip", want gemma3_text`)
}
