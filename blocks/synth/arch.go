package synth

import (
	"fmt"
	"strings"
)

// The architectures synth writes, by ModelInfo.Arch name.
const (
	ArchLlama   = "llama"
	ArchMistral = "mistral"
	ArchQwen2   = "qwen2"
	ArchQwen3   = "qwen3"
	ArchGemma3  = "gemma3"
)

// Archs lists the architectures Config.Arch accepts.
var Archs = []string{ArchLlama, ArchMistral, ArchQwen2, ArchQwen3, ArchGemma3}

// Block tensor kinds beyond the nine Llama ones (kAttnNorm..kW3).
const (
	kBQ = nBlockKinds + iota
	kBK
	kBV
	kQNorm
	kKNorm
	kPostAttnNorm
	kPostFFNNorm
	nAllKinds
)

// archSpec is how one architecture is written, following what
// llama.cpp's convert_hf_to_gguf.py writes for it and what transformers
// saves.
type archSpec struct {
	gguf    string // general.architecture and key prefix
	hfType  string // config.json model_type
	hfClass string // config.json architectures[0]
	kinds   []int  // block tensors, in HF order
	// neox: llama.cpp runs the family with NeoX RoPE and its converter
	// keeps HF's rotate-half q/k rows; otherwise they are permuted into
	// adjacent pairs (LlamaModel.permute).
	neox bool
	// gemma: norms are stored as w with a (1 + w) scale in HF and as 1 + w
	// in GGUF (Gemma3Model.modify_tensors); FFNNorm is HF's
	// pre_feedforward_layernorm and post_attention_layernorm is a post
	// norm.
	gemma bool
}

var llamaKinds = []int{kAttnNorm, kWQ, kWK, kWV, kWO, kFFNNorm, kW1, kW2, kW3}

var archSpecs = map[string]archSpec{
	ArchLlama: {gguf: "llama", hfType: "llama", hfClass: "LlamaForCausalLM", kinds: llamaKinds},
	// convert_hf_to_gguf.py converts MistralForCausalLM with LlamaModel.
	ArchMistral: {gguf: "llama", hfType: "mistral", hfClass: "MistralForCausalLM", kinds: llamaKinds},
	ArchQwen2: {gguf: "qwen2", hfType: "qwen2", hfClass: "Qwen2ForCausalLM", neox: true,
		kinds: []int{kAttnNorm, kWQ, kBQ, kWK, kBK, kWV, kBV, kWO, kFFNNorm, kW1, kW2, kW3}},
	ArchQwen3: {gguf: "qwen3", hfType: "qwen3", hfClass: "Qwen3ForCausalLM", neox: true,
		kinds: []int{kAttnNorm, kWQ, kWK, kWV, kWO, kQNorm, kKNorm, kFFNNorm, kW1, kW2, kW3}},
	ArchGemma3: {gguf: "gemma3", hfType: "gemma3_text", hfClass: "Gemma3ForCausalLM", neox: true, gemma: true,
		kinds: []int{kAttnNorm, kWQ, kWK, kWV, kWO, kQNorm, kKNorm, kPostAttnNorm, kFFNNorm, kW1, kW2, kW3, kPostFFNNorm}},
}

// spec returns the archSpec of c (after withDefaults).
func (c Config) spec() archSpec { return archSpecs[c.Arch] }

// kindNames are a block tensor's names without the block prefix: GGUF
// (llama.cpp llama-arch.cpp) and Hugging Face (transformers).
func (s archSpec) kindNames(kind int) (ggufName, hfName string) {
	switch kind {
	case kAttnNorm:
		return "attn_norm.weight", "input_layernorm.weight"
	case kWQ:
		return "attn_q.weight", "self_attn.q_proj.weight"
	case kWK:
		return "attn_k.weight", "self_attn.k_proj.weight"
	case kWV:
		return "attn_v.weight", "self_attn.v_proj.weight"
	case kWO:
		return "attn_output.weight", "self_attn.o_proj.weight"
	case kBQ:
		return "attn_q.bias", "self_attn.q_proj.bias"
	case kBK:
		return "attn_k.bias", "self_attn.k_proj.bias"
	case kBV:
		return "attn_v.bias", "self_attn.v_proj.bias"
	case kQNorm:
		return "attn_q_norm.weight", "self_attn.q_norm.weight"
	case kKNorm:
		return "attn_k_norm.weight", "self_attn.k_norm.weight"
	case kPostAttnNorm:
		return "post_attention_norm.weight", "post_attention_layernorm.weight"
	case kFFNNorm:
		if s.gemma {
			return "ffn_norm.weight", "pre_feedforward_layernorm.weight"
		}
		return "ffn_norm.weight", "post_attention_layernorm.weight"
	case kW1:
		return "ffn_gate.weight", "mlp.gate_proj.weight"
	case kW2:
		return "ffn_down.weight", "mlp.down_proj.weight"
	case kW3:
		return "ffn_up.weight", "mlp.up_proj.weight"
	case kPostFFNNorm:
		return "post_ffw_norm.weight", "post_feedforward_layernorm.weight"
	}
	panic(fmt.Sprintf("synth: unknown tensor kind %d", kind))
}

// isNormKind reports whether kind is an RMSNorm weight.
func isNormKind(kind int) bool {
	switch kind {
	case kAttnNorm, kFFNNorm, kQNorm, kKNorm, kPostAttnNorm, kPostFFNNorm:
		return true
	}
	return false
}

// ParseArch returns the architecture named (case and surrounding spaces
// ignored); the error lists the supported ones.
func ParseArch(name string) (string, error) {
	a := strings.ToLower(strings.TrimSpace(name))
	if _, ok := archSpecs[a]; !ok {
		return "", fmt.Errorf("%w: unknown architecture %q (want one of %s)", ErrConfig, name, strings.Join(Archs, ", "))
	}
	return a, nil
}

// hfArchConfig adds the architecture's own config.json fields.
func (c Config) hfArchConfig(cfg map[string]any) {
	switch c.Arch {
	case ArchLlama:
		cfg["attention_bias"], cfg["mlp_bias"] = false, false
	case ArchMistral:
		cfg["sliding_window"] = nil // Mistral 7B v0.2+
	case ArchQwen2:
		cfg["use_sliding_window"], cfg["sliding_window"], cfg["max_window_layers"] = false, c.MaxSeqLen, c.Layers
	case ArchQwen3:
		cfg["attention_bias"], cfg["use_sliding_window"], cfg["sliding_window"] = false, false, nil
	case ArchGemma3:
		cfg["hidden_activation"] = "gelu_pytorch_tanh"
		cfg["query_pre_attn_scalar"] = c.headDim()
		cfg["sliding_window"] = c.SlidingWindow
		cfg["sliding_window_pattern"] = c.SlidingPattern
		types := make([]string, c.Layers)
		for b := range types {
			types[b] = "sliding_attention"
			if (b+1)%c.SlidingPattern == 0 {
				types[b] = "full_attention"
			}
		}
		cfg["layer_types"] = types
		cfg["rope_local_base_freq"] = c.RopeLocalTheta
		cfg["final_logit_softcapping"], cfg["attn_logit_softcapping"] = nil, nil
		cfg["attention_bias"] = false
	}
}

// ggufArchKVs are the architecture's own GGUF metadata keys.
func (c Config) ggufArchKVs() []ggufKV {
	if c.Arch != ArchGemma3 {
		return nil
	}
	p := c.spec().gguf + "."
	return []ggufKV{
		{p + "attention.sliding_window", uint32(c.SlidingWindow)},
		{p + "attention.sliding_window_pattern", uint32(c.SlidingPattern)},
	}
}
