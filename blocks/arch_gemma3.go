package blocks

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// Gemma 3 text models (Gemma Team 2025): every block is
//
//	h = x + PostAttnNorm(Attn(AttnNorm(x)))
//	y = h + PostFFNNorm(W2 · (gelu_tanh(W1·z) * (W3·z))),  z = FFNNorm(h)
//
// with per-head q/k RMSNorm before NeoX RoPE, scores divided by
// sqrt(query_pre_attn_scalar), and a local:global pattern: five of every
// six blocks (sliding_window_pattern 6) attend only to the last
// sliding_window positions and rotate with their own RoPE base
// (rope_local_base_freq 10000, unscaled); the sixth attends to everything
// with rope_theta (1e6) and the model's rope_scaling (linear 8 for 4B+).
// Embeddings are multiplied by sqrt(d_model); the LM head is the embedding.
// Gemma's RMSNorm scales by (1 + w).
//
//   - GGUF (general.architecture "gemma3"): llama.cpp's converter
//     (Gemma3Model) stores every norm weight as 1 + w, so they are used as
//     stored; q/k rows are not permuted (LLAMA_ROPE_TYPE_NEOX). Keys
//     gemma3.attention.sliding_window (required),
//     gemma3.attention.sliding_window_pattern (default 6, llama.cpp's
//     set_swa_pattern(6)), gemma3.rope.freq_base_swa (default 10000),
//     gemma3.final_logit_softcapping (optional). llama.cpp derives the
//     attention scale from the model type: 1/sqrt(d_model/n_heads) for
//     the 27B model (62 blocks), else 1/sqrt(head_dim); the same rule is
//     used here unless gemma3.attention.scale is present.
//     Tensors blk.N.{attn_q_norm,attn_k_norm,post_attention_norm,
//     post_ffw_norm}.weight besides the Llama ones.
//   - Hugging Face (model_type "gemma3_text", Gemma3ForCausalLM; the
//     multimodal "gemma3" checkpoints of 4B and up nest it under
//     text_config and their tensors under language_model.model. or
//     model.language_model., see gemma3TextConfig; the vision tower is
//     not read): norms w stored raw and shifted by 1 on load;
//     pre_feedforward_layernorm is the FFN norm, post_attention_layernorm
//     and post_feedforward_layernorm the post norms; sliding_window_pattern
//     or layer_types give the pattern.
var archGemma3 = &archDesc{
	name:            "gemma3",
	ggufArch:        []string{"gemma3"},
	hfTypes:         []string{"gemma3_text"},
	hfArchitectures: []string{"Gemma3ForCausalLM"},
	tensors: []tensorName{
		{SlotAttnNorm, "attn_norm.weight", "input_layernorm.weight"},
		{SlotWQ, "attn_q.weight", "self_attn.q_proj.weight"},
		{SlotWK, "attn_k.weight", "self_attn.k_proj.weight"},
		{SlotWV, "attn_v.weight", "self_attn.v_proj.weight"},
		{SlotWO, "attn_output.weight", "self_attn.o_proj.weight"},
		{SlotQNorm, "attn_q_norm.weight", "self_attn.q_norm.weight"},
		{SlotKNorm, "attn_k_norm.weight", "self_attn.k_norm.weight"},
		{SlotPostAttnNorm, "post_attention_norm.weight", "post_attention_layernorm.weight"},
		{SlotFFNNorm, "ffn_norm.weight", "pre_feedforward_layernorm.weight"},
		{SlotW1, "ffn_gate.weight", "mlp.gate_proj.weight"},
		{SlotW2, "ffn_down.weight", "mlp.down_proj.weight"},
		{SlotW3, "ffn_up.weight", "mlp.up_proj.weight"},
		{SlotPostFFNNorm, "post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
	},
	ffn:           ffnDense,
	ggufNeoX:      true,
	hfNormPlusOne: true,
	ggufHyper:     ggufGemma3,
	hfHyper:       hfGemma3,
}

func init() { registerArch(archGemma3) }

// gemma3Pattern is the default local:global pattern (five sliding blocks,
// then one global).
const gemma3Pattern = 6

// gemma3Common sets what every Gemma 3 model shares.
func gemma3Common(info *swarm.ModelInfo, p *archParams) {
	p.embedScale = float32(math.Sqrt(float64(info.DModel)))
	p.act = ActGELUTanh
}

func ggufGemma3(g *ggufMeta, prefix string, info *swarm.ModelInfo, p *archParams) error {
	gemma3Common(info, p)
	info.SlidingWindow = g.integer(prefix+"attention.sliding_window", 0, true)
	info.SlidingPattern = g.integer(prefix+"attention.sliding_window_pattern", gemma3Pattern, false)
	p.slidingTheta = g.number(prefix+"rope.freq_base_swa", 10000, false)
	p.finalSoftcap = g.number(prefix+"final_logit_softcapping", 0, false)
	if s := g.number(prefix+"attention.scale", 0, false); s > 0 {
		p.attnScale = 1 / s
	} else if info.NBlocks == 62 && info.NHeads > 0 {
		p.attnScale = math.Sqrt(float64(info.DModel / info.NHeads)) // Gemma 3 27B
	}
	if info.SlidingWindow < 1 {
		return fmt.Errorf("%sattention.sliding_window = %d, want >= 1", prefix, info.SlidingWindow)
	}
	return nil
}

func hfGemma3(c *hfConfig, info *swarm.ModelInfo, p *archParams) error {
	gemma3Common(info, p)
	if a := c.HiddenActivation; a != "" && a != "gelu_pytorch_tanh" {
		return fmt.Errorf("hidden_activation %q is not supported for gemma3 (want gelu_pytorch_tanh)", a)
	}
	if c.AttnLogitSoftcapping != nil {
		return fmt.Errorf("attn_logit_softcapping is not supported for gemma3 (want null)")
	}
	if c.AttentionBias {
		return fmt.Errorf("attention_bias is not supported for gemma3")
	}
	if c.SlidingWindow == nil || *c.SlidingWindow < 1 {
		return fmt.Errorf("sliding_window must be >= 1 for gemma3")
	}
	info.SlidingWindow = *c.SlidingWindow
	info.SlidingPattern = gemma3Pattern
	if c.SlidingWindowPattern != 0 {
		info.SlidingPattern = c.SlidingWindowPattern
	}
	if len(c.LayerTypes) > 0 {
		pat, err := patternOf(c.LayerTypes)
		if err != nil {
			return err
		}
		info.SlidingPattern = pat
	}
	p.slidingTheta = 10000
	if c.RopeLocalBaseFreq > 0 {
		p.slidingTheta = c.RopeLocalBaseFreq
	}
	if c.QueryPreAttnScalar > 0 {
		p.attnScale = math.Sqrt(c.QueryPreAttnScalar)
	}
	if c.FinalLogitSoftcapping != nil {
		p.finalSoftcap = *c.FinalLogitSoftcapping
	}
	return nil
}

// patternOf turns transformers' layer_types list ("sliding_attention" or
// "full_attention" per block) into a SlidingPattern: the position of the
// first full-attention block plus one, which must then repeat exactly (0
// when every block slides).
func patternOf(types []string) (int, error) {
	pat := 0
	for i, t := range types {
		if t == "full_attention" {
			pat = i + 1
			break
		}
	}
	for i, t := range types {
		want := "sliding_attention"
		if pat > 0 && (i+1)%pat == 0 {
			want = "full_attention"
		}
		if t != want {
			return 0, fmt.Errorf("layer_types[%d] = %q, want %q: only a repeating local:global pattern is supported", i, t, want)
		}
	}
	return pat, nil
}

// gemma3TextConfig returns the language model's config of a multimodal
// Gemma 3 config.json (model_type "gemma3"): its text_config read over the
// defaults of transformers' Gemma3TextConfig, which the published configs
// rely on (the 4B text_config names only hidden_size, intermediate_size,
// num_hidden_layers, rope_scaling and sliding_window). Token ids missing
// there come from the outer config.
func gemma3TextConfig(outer hfConfig) (hfConfig, error) {
	window := 4096
	t := hfConfig{
		VocabSize: 262208, HiddenSize: 2304, IntermediateSize: 9216, NumHiddenLayers: 26,
		NumAttentionHeads: 8, NumKeyValueHeads: 4, HeadDim: 256, MaxPositionEmbeddings: 131072,
		RMSNormEps: 1e-6, RopeTheta: 1e6, RopeLocalBaseFreq: 10000, QueryPreAttnScalar: 256,
		SlidingWindow: &window, SlidingWindowPattern: gemma3Pattern, HiddenActivation: "gelu_pytorch_tanh",
		TieWordEmbeddings: true,
	}
	if err := json.Unmarshal(outer.TextConfig, &t); err != nil {
		return hfConfig{}, err
	}
	if t.ModelType != "" && t.ModelType != "gemma3_text" {
		return hfConfig{}, fmt.Errorf("model_type %q, want gemma3_text", t.ModelType)
	}
	t.ModelType, t.Architectures, t.TextConfig = "gemma3_text", nil, nil
	if t.NameOrPath == "" {
		t.NameOrPath = outer.NameOrPath
	}
	for _, id := range []struct {
		dst      *json.RawMessage
		src, def string
	}{{&t.BOSTokenID, string(outer.BOSTokenID), "2"}, {&t.EOSTokenID, string(outer.EOSTokenID), "1"}} {
		switch {
		case len(*id.dst) > 0:
		case id.src != "":
			*id.dst = json.RawMessage(id.src)
		default:
			*id.dst = json.RawMessage(id.def)
		}
	}
	return t, nil
}
