package blocks

import (
	"fmt"

	"github.com/swarmllm/swarm/swarm"
)

// Mistral (Jiang et al. 2023, Mistral 7B): the Llama block and tensor
// names; Mistral 7B v0.1 limits every block's attention to a sliding
// window of 4096 tokens (config.json sliding_window; null from v0.2 on).
//
//   - Hugging Face (model_type "mistral", MistralForCausalLM): rotate-half
//     q/k, permuted on load; sliding_window, when set, applies to every
//     block (transformers MistralAttention), so ModelInfo.SlidingPattern
//     is 0.
//   - GGUF: llama.cpp's converter writes Mistral checkpoints as
//     general.architecture "llama" (MistralForCausalLM is a LlamaModel in
//     convert_hf_to_gguf.py) and llama.cpp ignores their sliding window;
//     such files load with archLlama. No GGUF architecture name maps here.
var archMistral = &archDesc{
	name:            "mistral",
	hfTypes:         []string{"mistral"},
	hfArchitectures: []string{"MistralForCausalLM"},
	tensors:         llamaTensors,
	ffn:             ffnDense,
	hfHyper:         hfMistral,
}

func init() { registerArch(archMistral) }

// hfMistral reads the sliding window of a Mistral config.json.
func hfMistral(c *hfConfig, info *swarm.ModelInfo, p *archParams) error {
	if err := hfNoBiases(c, info, p); err != nil {
		return err
	}
	if c.SlidingWindow != nil {
		if *c.SlidingWindow < 1 {
			return fmt.Errorf("sliding_window = %d, want null or >= 1", *c.SlidingWindow)
		}
		info.SlidingWindow = *c.SlidingWindow
		info.SlidingPattern = 0 // every block
	}
	return nil
}
