package blocks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/swarmllm/swarm/swarm"
)

// Hugging Face model directories: config.json (the transformers config of
// one of the families in the architecture table, found by model_type) plus
// model.safetensors, or shards listed in model.safetensors.index.json
// ({"weight_map": {tensor: file}}), plus tokenizer.model or tokenizer.json.
// HF's q_proj/k_proj rows are in rotate-half RoPE order for every family;
// they are permuted into the engine's adjacent-pair order when loaded
// (hfPermutation).

// hfConfig is the part of config.json the engine needs.
type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	NameOrPath            string          `json:"_name_or_path"`
	HiddenSize            int             `json:"hidden_size"`
	IntermediateSize      int             `json:"intermediate_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      int             `json:"num_key_value_heads"`
	HeadDim               int             `json:"head_dim"`
	VocabSize             int             `json:"vocab_size"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	RMSNormEps            float64         `json:"rms_norm_eps"`
	RopeTheta             float64         `json:"rope_theta"`
	RopeScaling           *hfRopeScaling  `json:"rope_scaling"`
	TieWordEmbeddings     bool            `json:"tie_word_embeddings"`
	BOSTokenID            json.RawMessage `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
	AttentionBias         bool            `json:"attention_bias"`
	MLPBias               bool            `json:"mlp_bias"`
	// Sliding-window attention (Mistral, Qwen2, Gemma 3).
	SlidingWindow        *int     `json:"sliding_window"`
	UseSlidingWindow     bool     `json:"use_sliding_window"`
	SlidingWindowPattern int      `json:"sliding_window_pattern"`
	LayerTypes           []string `json:"layer_types"`
	// Gemma 3.
	RopeLocalBaseFreq     float64  `json:"rope_local_base_freq"`
	QueryPreAttnScalar    float64  `json:"query_pre_attn_scalar"`
	FinalLogitSoftcapping *float64 `json:"final_logit_softcapping"`
	AttnLogitSoftcapping  *float64 `json:"attn_logit_softcapping"`
	HiddenActivation      string   `json:"hidden_activation"`
	// TextConfig is the language model's config of a multimodal
	// checkpoint (Gemma 3 4B and up: model_type "gemma3").
	TextConfig json.RawMessage `json:"text_config"`
}

type hfRopeScaling struct {
	RopeType                      string  `json:"rope_type"`
	Type                          string  `json:"type"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
}

// tokenID decodes a token id that config.json may give as a number, a list
// of numbers (the first is used) or null.
func tokenID(raw json.RawMessage, def int) int {
	var n int
	if json.Unmarshal(raw, &n) == nil && len(raw) > 0 && string(raw) != "null" {
		return n
	}
	var l []int
	if json.Unmarshal(raw, &l) == nil && len(l) > 0 {
		return l[0]
	}
	return def
}

// openHF reads config.json and the safetensors headers of a directory.
func openHF(m *Model, cfg *config, dir string) error {
	m.format = "hf"
	m.chatTemplate = func() (string, error) { return hfChatTemplate(dir) }
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return fmt.Errorf("%w: %s: not a Hugging Face model directory: %w", ErrFormat, dir, err)
	}
	var c hfConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrFormat, cfgPath, err)
	}
	multimodal := false
	if c.ModelType == "gemma3" && len(c.TextConfig) > 0 {
		if c, err = gemma3TextConfig(c); err != nil {
			return fmt.Errorf("%w: %s: text_config: %w", ErrFormat, cfgPath, err)
		}
		multimodal = true
	}
	a, err := archForHF(c.ModelType, c.Architectures)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrFormat, cfgPath, err)
	}
	m.arch = a
	info := swarm.ModelInfo{
		Arch:           a.name,
		NBlocks:        c.NumHiddenLayers,
		DModel:         c.HiddenSize,
		NHeads:         c.NumAttentionHeads,
		NKVHeads:       c.NumKeyValueHeads,
		HeadDim:        c.HeadDim,
		FFNDim:         c.IntermediateSize,
		Vocab:          c.VocabSize,
		MaxSeqLen:      c.MaxPositionEmbeddings,
		RopeTheta:      c.RopeTheta,
		NormEps:        c.RMSNormEps,
		TiedEmbeddings: c.TieWordEmbeddings,
		BOS:            tokenID(c.BOSTokenID, 1),
		EOS:            tokenID(c.EOSTokenID, 2),
	}
	if info.NKVHeads == 0 {
		info.NKVHeads = info.NHeads
	}
	if info.HeadDim == 0 && info.NHeads > 0 {
		info.HeadDim = info.DModel / info.NHeads
	}
	if info.RopeTheta == 0 {
		info.RopeTheta = 10000
	}
	if info.NormEps == 0 {
		info.NormEps = 1e-6 // transformers' LlamaConfig default
	}
	if s := c.RopeScaling; s != nil {
		t := s.RopeType
		if t == "" {
			t = s.Type
		}
		switch t {
		case "", "default":
		case "linear", "llama3":
			info.RopeScaling = &swarm.RopeScaling{
				Type: t, Factor: s.Factor, LowFreqFactor: s.LowFreqFactor,
				HighFreqFactor: s.HighFreqFactor, OriginalMaxPositions: s.OriginalMaxPositionEmbeddings,
			}
		default:
			return fmt.Errorf("%w: %s: rope_scaling type %q is not supported (want linear or llama3)", ErrFormat, cfgPath, t)
		}
	}
	if a.hfHyper != nil {
		if err := a.hfHyper(&c, &info, &m.params); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrFormat, cfgPath, err)
		}
	}
	info.Name = filepath.Base(filepath.Clean(dir))
	if c.NameOrPath != "" {
		info.Name = filepath.Base(c.NameOrPath)
	}
	if err := info.Validate(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrFormat, cfgPath, err)
	}
	m.info = info

	// Where each tensor lives.
	where := map[string]*safetensorsFile{}
	single := filepath.Join(dir, "model.safetensors")
	index := filepath.Join(dir, "model.safetensors.index.json")
	var files []string
	weightMap := map[string]string{}
	if _, err := os.Stat(single); err == nil {
		files = []string{"model.safetensors"}
	} else if raw, err := os.ReadFile(index); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(raw, &idx); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrFormat, index, err)
		}
		weightMap = idx.WeightMap
		seen := map[string]bool{}
		for _, f := range weightMap {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
		sort.Strings(files)
	} else {
		return fmt.Errorf("%w: %s: neither model.safetensors nor model.safetensors.index.json is present", ErrFormat, dir)
	}
	for _, name := range files {
		if filepath.Base(name) != name {
			return fmt.Errorf("%w: %s: shard %q must be a file name in the model directory", ErrFormat, index, name)
		}
		mf, err := m.open(cfg, filepath.Join(dir, name))
		if err != nil {
			return err
		}
		sf, err := readSafetensors(mf)
		if err != nil {
			return err
		}
		for t := range sf.tensors {
			if f, ok := weightMap[t]; !ok || f == name {
				where[t] = sf
			}
		}
	}
	get := func(name string, required bool) (*tensorRef, error) {
		sf, ok := where[name]
		if !ok {
			if required {
				return nil, fmt.Errorf("%w: %s: tensor %s is missing", ErrFormat, dir, name)
			}
			return nil, nil
		}
		r, err := sf.ref(name)
		if err != nil {
			return nil, err
		}
		return &r, nil
	}
	// The language model's tensors: "model." in a text-only checkpoint;
	// multimodal ones nest it (transformers' older and newer layouts).
	prefix := "model."
	if multimodal {
		for _, p := range []string{"language_model.model.", "model.language_model."} {
			if _, ok := where[p+"embed_tokens.weight"]; ok {
				prefix = p
			}
		}
	}
	embed, err := get(prefix+"embed_tokens.weight", true)
	if err != nil {
		return err
	}
	m.embed = *embed
	norm, err := get(prefix+"norm.weight", true)
	if err != nil {
		return err
	}
	norm.plusOne = a.hfNormPlusOne
	m.outputNorm = *norm
	if !info.TiedEmbeddings {
		if m.output, err = get("lm_head.weight", false); err != nil {
			return err
		}
		m.info.TiedEmbeddings = m.output == nil
	}
	m.layers = make([][NumSlots]tensorRef, info.NBlocks)
	for b := range info.NBlocks {
		for _, tn := range a.tensors {
			t, err := get(fmt.Sprintf("%slayers.%d.%s", prefix, b, tn.hf), true)
			if err != nil {
				return err
			}
			t.permuteHeads = ropeHeads(tn.slot, &info) // rotate-half in every family
			t.plusOne = a.hfNormPlusOne && isNorm(tn.slot)
			m.layers[b][tn.slot] = *t
		}
	}
	for _, name := range []string{"tokenizer.model", "tokenizer.json"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			m.tokenizerPath = p
			m.loadTok = loadTokenizerFile
			break
		}
	}
	return nil
}
