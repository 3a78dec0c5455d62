package blocks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/swarmllm/swarm/swarm"
)

// The architecture table: every decoder-only family the engine runs is one
// archDesc, declared in its own arch_<name>.go file and registered in
// archTable. A descriptor says how to read the family's hyper-parameters
// from GGUF metadata and from a Hugging Face config.json, which block
// tensors it has and what each format calls them, the RoPE order of its
// q/k rows, and the options of its block and head. The format readers
// (gguf.go, hf.go) look the family up here; the block forward (block.go)
// and the head (head.go) run whatever optional tensors a layer holds.

// isNorm reports whether slot holds RMSNorm weights (which Gemma's HF
// checkpoints store as w for a (1+w) scale).
func isNorm(slot Slot) bool {
	switch slot {
	case SlotAttnNorm, SlotQNorm, SlotKNorm, SlotPostAttnNorm, SlotFFNNorm, SlotPostFFNNorm:
		return true
	}
	return false
}

// slotShape is the [rows, cols] of a slot's tensor for info.
func slotShape(slot Slot, info *swarm.ModelInfo) (rows, cols int) {
	d, q, kv, f := info.DModel, info.NHeads*info.HeadDim, info.NKVHeads*info.HeadDim, info.FFNDim
	shapes := [NumSlots][2]int{
		SlotAttnNorm: {1, d}, SlotWQ: {q, d}, SlotWK: {kv, d}, SlotWV: {kv, d}, SlotWO: {d, q},
		SlotBQ: {1, q}, SlotBK: {1, kv}, SlotBV: {1, kv}, SlotQNorm: {1, info.HeadDim}, SlotKNorm: {1, info.HeadDim},
		SlotPostAttnNorm: {1, d}, SlotFFNNorm: {1, d}, SlotW1: {f, d}, SlotW2: {d, f}, SlotW3: {f, d}, SlotPostFFNNorm: {1, d},
	}
	return shapes[slot][0], shapes[slot][1]
}

// tensorName is one block tensor of an architecture: its slot and its name
// in each format, without the per-block prefix ("blk.N." in GGUF,
// "model.layers.N." in Hugging Face safetensors).
type tensorName struct {
	slot     Slot
	gguf, hf string
}

// llamaTensors are the nine tensors of a Llama block, shared by the
// families built on it (llama.cpp llama-arch.cpp LLM_TENSOR_* names;
// transformers modeling_llama names).
var llamaTensors = []tensorName{
	{SlotAttnNorm, "attn_norm.weight", "input_layernorm.weight"},
	{SlotWQ, "attn_q.weight", "self_attn.q_proj.weight"},
	{SlotWK, "attn_k.weight", "self_attn.k_proj.weight"},
	{SlotWV, "attn_v.weight", "self_attn.v_proj.weight"},
	{SlotWO, "attn_output.weight", "self_attn.o_proj.weight"},
	{SlotFFNNorm, "ffn_norm.weight", "post_attention_layernorm.weight"},
	{SlotW1, "ffn_gate.weight", "mlp.gate_proj.weight"},
	{SlotW2, "ffn_down.weight", "mlp.down_proj.weight"},
	{SlotW3, "ffn_up.weight", "mlp.up_proj.weight"},
}

// activation is the gate non-linearity of a gated feed-forward network.
type Activation int

const (
	// actSiLU is SwiGLU: silu(gate) * up (Shazeer 2020, eq. 6).
	ActSiLU Activation = iota
	// actGELUTanh is GeGLU with the tanh approximation of GELU
	// (Hendrycks & Gimpel 2016, eq. 2; transformers "gelu_pytorch_tanh").
	ActGELUTanh
)

// ffnKind is how a block's feed-forward network is built. Only ffnDense is
// implemented. A mixture-of-experts family (Mixtral, Qwen3-MoE) would use
// ffnMoE with, per block, a router [NExperts, DModel] (GGUF
// ffn_gate_inp.weight) choosing the top k of NExperts experts, each a
// gated FFN stored stacked as [NExperts, FFNDim, DModel] (GGUF
// ffn_gate_exps/ffn_up_exps/ffn_down_exps); archDesc.experts names them
// and hyper-parameters n_experts / n_experts_used join ModelInfo then.
type ffnKind int

const (
	ffnDense ffnKind = iota // one gated FFN (w1, w2, w3)
	ffnMoE                  // router + experts; not implemented yet
)

// expertNames would name a mixture-of-experts FFN's tensors (see ffnKind).
type expertNames struct {
	router, gate, up, down tensorName
}

// archParams are the per-model numbers the block forward and the head need
// beyond ModelInfo, read from the file by the architecture's hooks.
type archParams struct {
	// attnScale divides q·k: sqrt(HeadDim) unless the family says otherwise
	// (Gemma 3: sqrt(query_pre_attn_scalar)).
	attnScale float64
	// slidingTheta is the RoPE base of sliding-window blocks (Gemma 3
	// rope_local_base_freq); 0 means RopeTheta. Sliding blocks use no RoPE
	// scaling (llama.cpp rope_freq_scale_train_swa = 1).
	slidingTheta float64
	// embedScale multiplies the token embeddings (Gemma: sqrt(DModel));
	// 0 means 1.
	embedScale float32
	// finalSoftcap, when > 0, caps the logits: c * tanh(logits / c)
	// (Gemma 2 final_logit_softcapping).
	finalSoftcap float64
	// act is the feed-forward gate non-linearity.
	act Activation
}

// archDesc describes one architecture family.
type archDesc struct {
	// name is ModelInfo.Arch.
	name string
	// ggufArch are the general.architecture values read with this entry;
	// its metadata keys are prefixed with that value.
	ggufArch []string
	// hfTypes are the config.json model_type values, hfArchitectures the
	// architectures[] class names, read with this entry.
	hfTypes, hfArchitectures []string
	// tensors are the block tensors, all required.
	tensors []tensorName
	// ffn is the feed-forward kind; experts names a MoE FFN's tensors.
	ffn     ffnKind
	experts *expertNames
	// ggufNeoX is true when GGUF files store q/k rows in rotate-half
	// (NeoX) order: llama.cpp's converter permutes q/k rows into
	// adjacent-pair order only for LLAMA_ROPE_TYPE_NORM families (llama);
	// NeoX families (qwen2, qwen3, gemma3) keep the Hugging Face order.
	// Hugging Face checkpoints are rotate-half for every family.
	ggufNeoX bool
	// hfNormPlusOne is true when Hugging Face RMSNorm weights w scale by
	// (1 + w) (Gemma); llama.cpp's converter stores 1 + w in GGUF.
	hfNormPlusOne bool
	// ggufHyper and hfHyper read the family's own hyper-parameters (the
	// common ones are read by the format readers) into info and p; nil
	// when there are none.
	ggufHyper func(g *ggufMeta, prefix string, info *swarm.ModelInfo, p *archParams) error
	hfHyper   func(c *hfConfig, info *swarm.ModelInfo, p *archParams) error
}

// archTable holds every supported architecture, by name.
var archTable = map[string]*archDesc{}

// registerArch adds a descriptor to archTable (from the arch files' init).
func registerArch(a *archDesc) {
	if _, dup := archTable[a.name]; dup {
		panic("blocks: architecture " + a.name + " registered twice")
	}
	archTable[a.name] = a
}

// supportedArchs lists the supported architecture names, sorted.
func supportedArchs() string {
	names := make([]string, 0, len(archTable))
	for n := range archTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// archForGGUF finds the architecture of a GGUF general.architecture value.
func archForGGUF(general string) (*archDesc, error) {
	for _, a := range archTable {
		for _, g := range a.ggufArch {
			if g == general {
				return a, nil
			}
		}
	}
	return nil, fmt.Errorf("general.architecture %q is not supported (supported: %s)", general, supportedArchs())
}

// archForHF finds the architecture of a config.json by model_type, else by
// its first architectures[] class.
func archForHF(modelType string, architectures []string) (*archDesc, error) {
	for _, a := range archTable {
		for _, t := range a.hfTypes {
			if t == modelType {
				return a, nil
			}
		}
	}
	if modelType == "" && len(architectures) > 0 {
		for _, a := range archTable {
			for _, c := range a.hfArchitectures {
				if c == architectures[0] {
					return a, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("model_type %q (architectures %v) is not supported (supported: %s)", modelType, architectures, supportedArchs())
}

// ropeHeads is the tensorRef.permuteHeads of a slot whose rows (or
// elements) are in rotate-half RoPE order: the number of heads of q or k
// rows and biases, 1 for the per-head q/k norm weights [HeadDim], 0 for
// slots RoPE does not touch.
func ropeHeads(slot Slot, info *swarm.ModelInfo) int {
	switch slot {
	case SlotWQ, SlotBQ:
		return info.NHeads
	case SlotWK, SlotBK:
		return info.NKVHeads
	case SlotQNorm, SlotKNorm:
		return 1
	}
	return 0
}
