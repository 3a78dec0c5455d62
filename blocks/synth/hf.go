package synth

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/swarm"
)

// hfTensor is one tensor of a safetensors file being written.
type hfTensor struct {
	name string
	t    tensor
}

var hfDTypes = map[swarm.DType]struct{ st, torch string }{
	swarm.DTypeF32:  {"F32", "float32"},
	swarm.DTypeF16:  {"F16", "float16"},
	swarm.DTypeBF16: {"BF16", "bfloat16"},
}

// WriteHF writes the model as a Hugging Face directory: config.json,
// model.safetensors, a SentencePiece tokenizer.model and the equivalent
// tokenizer.json. The directory is
// created if needed. DType must be f32, f16 or bf16.
func WriteHF(dir string, c Config) error { return WriteHFShards(dir, c, 1) }

// WriteHFShards is WriteHF with the weights split over n safetensors files
// model-0000i-of-0000n.safetensors listed in model.safetensors.index.json
// (for n > 1): blocks are spread evenly, the embedding goes in the first
// shard, the final norm and LM head in the last.
func WriteHFShards(dir string, c Config, n int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c = c.withDefaults()
	dts, ok := hfDTypes[c.DType]
	if !ok {
		return fmt.Errorf("%w: dtype %v cannot be stored in safetensors here (want f32, f16 or bf16)", ErrConfig, c.DType)
	}
	if n < 1 || n > c.Layers {
		return fmt.Errorf("%w: %d shards for %d layers, want 1..layers", ErrConfig, n, c.Layers)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	shards := make([][]hfTensor, n)
	shards[0] = append(shards[0], hfTensor{"model.embed_tokens.weight", c.globalTensor(kEmbed)})
	sp := c.spec()
	for b := range c.Layers {
		s := b * n / c.Layers
		for _, k := range sp.kinds {
			_, name := sp.kindNames(k)
			shards[s] = append(shards[s], hfTensor{fmt.Sprintf("model.layers.%d.%s", b, name), c.blockTensor(b, k)})
		}
	}
	shards[n-1] = append(shards[n-1], hfTensor{"model.norm.weight", c.globalTensor(kNorm)})
	if !c.Tied {
		shards[n-1] = append(shards[n-1], hfTensor{"lm_head.weight", c.globalTensor(kOutput)})
	}
	weightMap := map[string]string{}
	var total int64
	for i, ts := range shards {
		name := "model.safetensors"
		if n > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
		}
		size, err := writeSafetensors(filepath.Join(dir, name), c, dts.st, ts)
		if err != nil {
			return err
		}
		total += size
		for _, t := range ts {
			weightMap[t.name] = name
		}
	}
	if n > 1 {
		idx := map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}
		if err := writeJSON(filepath.Join(dir, "model.safetensors.index.json"), idx); err != nil {
			return err
		}
	}
	cfg := map[string]any{
		"_name_or_path":           c.Name,
		"architectures":           []string{sp.hfClass},
		"model_type":              sp.hfType,
		"hidden_act":              "silu",
		"hidden_size":             c.Dim,
		"intermediate_size":       c.FFN,
		"num_hidden_layers":       c.Layers,
		"num_attention_heads":     c.Heads,
		"num_key_value_heads":     c.KVHeads,
		"head_dim":                c.headDim(),
		"vocab_size":              c.Vocab,
		"max_position_embeddings": c.MaxSeqLen,
		"rms_norm_eps":            c.NormEps,
		"rope_theta":              c.RopeTheta,
		"rope_scaling":            nil,
		"tie_word_embeddings":     c.Tied,
		"bos_token_id":            bosID,
		"eos_token_id":            eosID,
		"torch_dtype":             dts.torch,
	}
	if sp.gemma {
		delete(cfg, "hidden_act")
	}
	c.hfArchConfig(cfg)
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	if c.Tokenizer != "" {
		return copyRealTokenizer(dir, c)
	}
	if err := WriteSentencePiece(filepath.Join(dir, "tokenizer.model"), c); err != nil {
		return err
	}
	return writeTokenizer(filepath.Join(dir, "tokenizer.json"), c, tokenizer.WriteHF)
}

// WriteSentencePiece writes the vocabulary of c as a SentencePiece
// tokenizer.model (BPE with byte fallback).
func WriteSentencePiece(path string, c Config) error {
	return writeTokenizer(path, c, tokenizer.WriteSentencePieceModel)
}

// writeTokenizer writes the vocabulary of c with one of blocks/tokenizer's
// writers.
func writeTokenizer(path string, c Config, write func(io.Writer, []string, []float32, []int32) error) error {
	pieces, scores, types, err := Vocab(c.Vocab)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	w := bufio.NewWriter(f)
	err = write(w, pieces, scores, types)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("synth: writing %s: %w", path, err)
	}
	return nil
}

// writeSafetensors writes one safetensors file (an 8-byte little-endian
// header length, the JSON header padded with spaces to 8 bytes, the data) and
// returns the bytes of tensor data.
func writeSafetensors(path string, c Config, dtype string, ts []hfTensor) (int64, error) {
	type entry struct {
		DType       string  `json:"dtype"`
		Shape       []int   `json:"shape"`
		DataOffsets []int64 `json:"data_offsets"`
	}
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, t := range ts {
		shape := []int{t.t.rows, t.t.cols}
		if t.t.vec {
			shape = []int{t.t.cols}
		}
		size := c.DType.Bytes(int64(t.t.rows) * int64(t.t.cols))
		hdr[t.name] = entry{DType: dtype, Shape: shape, DataOffsets: []int64{off, off + size}}
		off += size
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return 0, fmt.Errorf("synth: %w", err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("synth: %w", err)
	}
	w := &le{w: bufio.NewWriterSize(f, 1<<20)}
	w.bytes(binary.LittleEndian.AppendUint64(nil, uint64(len(js))))
	w.bytes(js)
	for _, t := range ts {
		w.bytes(encode(c.values(t.t), c.DType))
	}
	return off, finish(f, w)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// HFValues returns the values of one tensor by its Hugging Face name
// ("model.embed_tokens.weight", "model.layers.3.self_attn.q_proj.weight",
// "model.norm.weight", "lm_head.weight"), in Hugging Face layout (q/k rows in
// rotate-half order), row-major [rows, cols], exactly as WriteHF stores them
// (widened to float32), together with the shape [rows, cols] (rows = 1 for a
// norm vector). It is the oracle for tests that recompute the model
// independently.
func HFValues(c Config, name string) (values []float32, rows, cols int, err error) {
	if err := c.Validate(); err != nil {
		return nil, 0, 0, err
	}
	c = c.withDefaults()
	var t tensor
	switch name {
	case "model.embed_tokens.weight":
		t = c.globalTensor(kEmbed)
	case "model.norm.weight":
		t = c.globalTensor(kNorm)
	case "lm_head.weight":
		t = c.globalTensor(kOutput)
		if c.Tied {
			t = c.globalTensor(kEmbed)
		}
	default:
		var b int
		var rest string
		if _, err := fmt.Sscanf(name, "model.layers.%d.%s", &b, &rest); err != nil || b < 0 || b >= c.Layers {
			return nil, 0, 0, fmt.Errorf("%w: no tensor %q", ErrConfig, name)
		}
		k := -1
		sp := c.spec()
		for _, kind := range sp.kinds {
			if _, n := sp.kindNames(kind); rest == n {
				k = kind
			}
		}
		if k < 0 {
			return nil, 0, 0, fmt.Errorf("%w: no tensor %q", ErrConfig, name)
		}
		t = c.blockTensor(b, k)
	}
	return c.values(t), t.rows, t.cols, nil
}
