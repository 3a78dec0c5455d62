package blocks

// Qwen3 dense models (Qwen Team 2025): the Llama block without biases plus
// a per-head RMSNorm of q and of k (weights [HeadDim], shared by all heads)
// applied after the projections and before RoPE; NeoX RoPE; head_dim is
// explicit (128) and need not equal d_model/n_heads.
//
//   - GGUF (general.architecture "qwen3"): LLAMA_ROPE_TYPE_NEOX, q/k not
//     permuted by the converter (so permuted here, q/k norms with them);
//     tensors blk.N.attn_q_norm.weight and blk.N.attn_k_norm.weight, head
//     size in qwen3.attention.key_length.
//   - Hugging Face (model_type "qwen3", Qwen3ForCausalLM):
//     self_attn.q_norm.weight and self_attn.k_norm.weight.
//
// Qwen3-MoE (qwen3moe) would be the same attention with an ffnMoE
// feed-forward.
var archQwen3 = &archDesc{
	name:            "qwen3",
	ggufArch:        []string{"qwen3"},
	hfTypes:         []string{"qwen3"},
	hfArchitectures: []string{"Qwen3ForCausalLM"},
	tensors: append(append([]tensorName(nil), llamaTensors...),
		tensorName{SlotQNorm, "attn_q_norm.weight", "self_attn.q_norm.weight"},
		tensorName{SlotKNorm, "attn_k_norm.weight", "self_attn.k_norm.weight"},
	),
	ffn:      ffnDense,
	ggufNeoX: true,
	hfHyper:  hfNoBiases,
}

func init() { registerArch(archQwen3) }
