package blocks

import (
	"fmt"

	"github.com/swarmllm/swarm/swarm"
)

// Qwen2 / Qwen2.5 (Qwen Team 2024): the Llama block with biases on the q, k
// and v projections (not on o), NeoX RoPE with theta 1e6, RMSNorm eps 1e-6,
// tied embeddings in the small models.
//
//   - GGUF (general.architecture "qwen2"): llama.cpp runs it with
//     LLAMA_ROPE_TYPE_NEOX and its converter (Qwen2Model) does not permute
//     q/k, so GGUF rows are in rotate-half order like HF's: both are
//     permuted into the engine's adjacent-pair order on load, biases too.
//     Tensors blk.N.attn_{q,k,v}.bias; 1-D tensors are F32.
//   - Hugging Face (model_type "qwen2", Qwen2ForCausalLM):
//     self_attn.{q,k,v}_proj.bias. use_sliding_window (off in every
//     released Qwen2.5 model) is refused.
var archQwen2 = &archDesc{
	name:            "qwen2",
	ggufArch:        []string{"qwen2"},
	hfTypes:         []string{"qwen2"},
	hfArchitectures: []string{"Qwen2ForCausalLM"},
	tensors: append(append([]tensorName(nil), llamaTensors...),
		tensorName{SlotBQ, "attn_q.bias", "self_attn.q_proj.bias"},
		tensorName{SlotBK, "attn_k.bias", "self_attn.k_proj.bias"},
		tensorName{SlotBV, "attn_v.bias", "self_attn.v_proj.bias"},
	),
	ffn:      ffnDense,
	ggufNeoX: true,
	hfHyper:  hfQwen2,
}

func init() { registerArch(archQwen2) }

// hfQwen2 refuses Qwen2's optional sliding-window attention.
func hfQwen2(c *hfConfig, _ *swarm.ModelInfo, _ *archParams) error {
	if c.UseSlidingWindow {
		return fmt.Errorf("use_sliding_window = true is not supported for qwen2 (want false, as in the released models)")
	}
	return nil
}
