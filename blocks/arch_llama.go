package blocks

import (
	"fmt"

	"github.com/swarmllm/swarm/swarm"
)

// Llama (Touvron et al. 2023; Llama 2, Llama 3/3.1/3.2): pre-norm blocks of
// grouped-query attention with RoPE and a SwiGLU feed-forward, final
// RMSNorm, LM head optionally tied to the embeddings (Llama 3.2).
//
//   - GGUF (general.architecture "llama"): llama.cpp's converter permutes
//     HF q/k rows into adjacent-pair RoPE order (LlamaModel.permute,
//     LLAMA_ROPE_TYPE_NORM), so they are used as stored. Llama 3.1 files
//     carry their "llama3" frequency scaling as rope_freqs.weight. Mistral
//     checkpoints converted by llama.cpp are "llama" GGUF files too.
//   - Hugging Face (model_type "llama", LlamaForCausalLM): rotate-half q/k,
//     permuted on load; rope_scaling "linear" or "llama3".
//   - llama2.c checkpoints (llama2c.go) are this architecture.
var archLlama = &archDesc{
	name:            "llama",
	ggufArch:        []string{"llama"},
	hfTypes:         []string{"llama"},
	hfArchitectures: []string{"LlamaForCausalLM"},
	tensors:         llamaTensors,
	ffn:             ffnDense,
	hfHyper:         hfNoBiases,
}

func init() { registerArch(archLlama) }

// hfNoBiases refuses a config.json whose projections carry biases the
// family's tensor map does not read (transformers attention_bias, mlp_bias).
func hfNoBiases(c *hfConfig, _ *swarm.ModelInfo, _ *archParams) error {
	if c.AttentionBias || c.MLPBias {
		return fmt.Errorf("attention_bias/mlp_bias are not supported for model_type %q", c.ModelType)
	}
	return nil
}
