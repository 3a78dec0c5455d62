// Package synth makes random-weight models of every architecture of
// blocks' table (llama, mistral, qwen2, qwen3, gemma3) and writes them as a
// Hugging Face directory (config.json, model.safetensors, tokenizer.model),
// as GGUF v3 (with the keys and tensor names llama.cpp's converter writes,
// so llama.cpp loads them) and, for llama, as llama2.c checkpoints, for
// benchmarks and for format
// round-trip tests: all three files of one synthesized model hold the same
// weights, so the engine must compute the same logits from each.
//
// Weights are generated tensor by tensor from the seed (each tensor has its
// own PCG stream), so a model of any size is written without holding it in
// memory, and the same Config always gives the same bytes.
//
// This package must never import other packages of this repository except
// swarm/ and blocks/tokenizer/.
package synth

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/x448/float16"

	"github.com/swarmllm/swarm/swarm"
)

// ErrConfig marks an invalid synthesis request.
var ErrConfig = errors.New("synth: bad config")

// Config is the shape of a synthesized model. Zero optional fields take the
// defaults of DefaultConfig.
type Config struct {
	// Arch is the architecture (Archs; default llama).
	Arch string
	// Name is ModelInfo.Name of the model (config.json _name_or_path,
	// GGUF general.name).
	Name string
	// Layers is the number of blocks L.
	Layers int
	// Dim is d_model.
	Dim int
	// FFN is the SwiGLU inner size.
	FFN int
	// Heads and KVHeads are the query and key/value head counts; Heads
	// must be a multiple of KVHeads.
	Heads, KVHeads int
	// HeadDim is the size of one head, even (default Dim/Heads, which must
	// then be an integer).
	HeadDim int
	// Vocab is the vocabulary size, at least 259 (3 special and 256 byte
	// pieces).
	Vocab int
	// DType is the storage dtype of the weights: f32, f16 or bf16, or for
	// GGUF only one of GGML's quantized types (q8_0, q4_0, ... q6_k,
	// iq4_nl, iq4_xs), where every matrix row must be whole blocks: Dim,
	// FFN and Heads*HeadDim multiples of 32 or 256 (DType.BlockSize).
	DType swarm.DType
	// Mix, when not empty, varies the dtype by tensor as a llama.cpp
	// quantization recipe does (MixQ4_K_M, with DType q4_k).
	Mix Mix
	// MaxSeqLen is the context length written to the files (default 2048).
	MaxSeqLen int
	// RopeTheta is the RoPE base (default 10000; 1e6 for qwen2, qwen3 and
	// gemma3).
	RopeTheta float64
	// NormEps is the RMSNorm epsilon (default 1e-5; 1e-6 for qwen2, qwen3
	// and gemma3).
	NormEps float64
	// SlidingWindow and SlidingPattern are gemma3's local attention window
	// in tokens and local:global pattern (defaults 4 and 2: every other
	// block is global, and the window is shorter than test prompts).
	SlidingWindow, SlidingPattern int
	// RopeLocalTheta is gemma3's RoPE base of sliding blocks (default
	// 10000).
	RopeLocalTheta float64
	// Tied makes the LM head share the token embedding (always for
	// gemma3).
	Tied bool
	// Seed selects the weights.
	Seed uint64
	// ChatTemplate, when not empty, is written as the GGUF key
	// tokenizer.chat_template (a Jinja2 template).
	ChatTemplate string
	// Tokenizer, when not empty, is the path of a Hugging Face
	// tokenizer.json (tokenizer_config.json is read from beside it) that
	// replaces the synthesized vocabulary: embedded in GGUF as llama.cpp's
	// converter does, copied into HF directories (tokenizer.go). Vocab must
	// be its size: set both with WithTokenizer.
	Tokenizer string
}

// DefaultConfig is a tiny model: 2 blocks, d_model 64, 4 heads, 2 KV heads,
// vocab 320, f32.
func DefaultConfig() Config {
	return Config{Name: "synth", Layers: 2, Dim: 64, FFN: 128, Heads: 4, KVHeads: 2, Vocab: 320,
		DType: swarm.DTypeF32, MaxSeqLen: 2048, RopeTheta: 10000, NormEps: 1e-5}
}

// withDefaults fills the optional fields.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Arch == "" {
		c.Arch = ArchLlama
	}
	if c.Name == "" {
		c.Name = d.Name
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Dim / c.Heads
	}
	switch c.Arch {
	case ArchQwen2, ArchQwen3, ArchGemma3:
		if c.RopeTheta == 0 {
			c.RopeTheta = 1e6
		}
		if c.NormEps == 0 {
			c.NormEps = 1e-6
		}
	}
	if c.Arch == ArchGemma3 {
		c.Tied = true
		if c.SlidingWindow == 0 {
			c.SlidingWindow = 4
		}
		if c.SlidingPattern == 0 {
			c.SlidingPattern = 2
		}
		if c.RopeLocalTheta == 0 {
			c.RopeLocalTheta = 10000
		}
	}
	if c.MaxSeqLen == 0 {
		c.MaxSeqLen = d.MaxSeqLen
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = d.RopeTheta
	}
	if c.NormEps == 0 {
		c.NormEps = d.NormEps
	}
	if c.DType == swarm.DTypeInvalid {
		c.DType = d.DType
	}
	return c
}

// Validate returns an error wrapping ErrConfig naming the first bad field.
func (c Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(f, a...)) }
	if c.HeadDim == 0 && c.Heads > 0 && c.Dim%c.Heads != 0 {
		return bad("heads = %d, want a divisor of dim = %d (or an explicit head dim)", c.Heads, c.Dim)
	}
	c = c.withDefaults()
	switch {
	case c.Layers < 1:
		return bad("layers = %d, want >= 1", c.Layers)
	case c.Dim < 2:
		return bad("dim = %d, want >= 2", c.Dim)
	case c.FFN < 1:
		return bad("ffn = %d, want >= 1", c.FFN)
	case c.spec().kinds == nil:
		return bad("arch %q, want one of %v", c.Arch, Archs)
	case c.Heads < 1 || c.HeadDim%2 != 0 || c.HeadDim < 2:
		return bad("heads = %d and head dim %d, want heads >= 1 and an even head size (dim = %d)", c.Heads, c.HeadDim, c.Dim)
	case c.Arch == ArchGemma3 && (c.SlidingWindow < 1 || c.SlidingPattern < 1):
		return bad("sliding window %d and pattern %d, want >= 1", c.SlidingWindow, c.SlidingPattern)
	case c.KVHeads < 1 || c.Heads%c.KVHeads != 0:
		return bad("kv-heads = %d, want a divisor of heads = %d", c.KVHeads, c.Heads)
	case c.Vocab < minVocab:
		return bad("vocab = %d, want >= %d (3 special and 256 byte pieces)", c.Vocab, minVocab)
	case c.MaxSeqLen < 1:
		return bad("max seq len = %d, want >= 1", c.MaxSeqLen)
	case c.NormEps <= 0 || c.RopeTheta <= 0:
		return bad("norm eps %g and rope theta %g must be > 0", c.NormEps, c.RopeTheta)
	case int64(c.Dim)*int64(c.FFN) > 1<<30 || int64(c.Vocab)*int64(c.Dim) > 1<<32:
		return bad("dim %d, ffn %d, vocab %d: matrices too large", c.Dim, c.FFN, c.Vocab)
	}
	switch {
	case c.DType == swarm.DTypeF32 || c.DType == swarm.DTypeF16 || c.DType == swarm.DTypeBF16:
	case quantizers[c.DType].quant != nil:
		// Every matrix row (dim, ffn or heads*head dim columns) must be
		// whole blocks of every dtype the file uses.
		bs := c.DType.BlockSize()
		if c.Mix != "" {
			bs = 256
		}
		if c.Dim%bs != 0 || c.FFN%bs != 0 || c.Heads*c.HeadDim%bs != 0 {
			return bad("%v needs dim, ffn and heads*head dim multiples of %d, got %d, %d and %d", c.DType, bs, c.Dim, c.FFN, c.Heads*c.HeadDim)
		}
	default:
		return bad("dtype %v, want f32, f16, bf16 or a GGML quantized type", c.DType)
	}
	switch c.Mix {
	case "":
	case MixQ4_K_M:
		if c.DType != swarm.DTypeQ4_K {
			return bad("mix %s with dtype %v, want q4_k", c.Mix, c.DType)
		}
	default:
		return bad("mix %q, want %s or none", c.Mix, MixQ4_K_M)
	}
	return nil
}

// Info is the swarm.ModelInfo a loader should report for the model (without
// BlockBytes and CacheBytesPerToken, which depend on the file). Arch is
// the Hugging Face directory's; a mistral GGUF file says "llama".
func (c Config) Info() swarm.ModelInfo {
	c = c.withDefaults()
	info := swarm.ModelInfo{
		Name: c.Name, Arch: c.Arch, NBlocks: c.Layers, DModel: c.Dim, NHeads: c.Heads, NKVHeads: c.KVHeads,
		HeadDim: c.HeadDim, FFNDim: c.FFN, Vocab: c.Vocab, MaxSeqLen: c.MaxSeqLen, RopeTheta: c.RopeTheta,
		NormEps: c.NormEps, TiedEmbeddings: c.Tied, DType: c.DType, BOS: bosID, EOS: eosID,
	}
	if c.Arch == ArchGemma3 {
		info.SlidingWindow, info.SlidingPattern = c.SlidingWindow, c.SlidingPattern
	}
	return info
}

// headDim is the size of one head (after withDefaults).
func (c Config) headDim() int { return c.HeadDim }

// Tensor kinds, in Hugging Face naming order within a block.
const (
	kAttnNorm = iota
	kWQ
	kWK
	kWV
	kWO
	kFFNNorm
	kW1
	kW2
	kW3
	nBlockKinds
)

// tensor is one tensor of the model: a matrix [rows, cols] (rows = 1 for a
// vector) in Hugging Face layout (q/k rows in rotate-half order).
type tensor struct {
	stream uint64 // PCG stream id: fixes the values
	block  int    // -1 for global tensors
	kind   int    // block kinds above, or kEmbed/kNorm/kOutput
	rows   int
	cols   int
	norm   bool // an RMSNorm weight
	vec    bool // 1-D: a norm weight or a bias (F32 in GGUF)
}

// Global tensor kinds.
const (
	kEmbed = 100 + iota
	kNorm
	kOutput
)

func (c Config) blockTensor(b, kind int) tensor {
	hd := c.headDim()
	shapes := [nAllKinds][2]int{
		kAttnNorm: {1, c.Dim}, kWQ: {c.Heads * hd, c.Dim}, kWK: {c.KVHeads * hd, c.Dim}, kWV: {c.KVHeads * hd, c.Dim},
		kWO: {c.Dim, c.Heads * hd}, kFFNNorm: {1, c.Dim}, kW1: {c.FFN, c.Dim}, kW2: {c.Dim, c.FFN}, kW3: {c.FFN, c.Dim},
		kBQ: {1, c.Heads * hd}, kBK: {1, c.KVHeads * hd}, kBV: {1, c.KVHeads * hd}, kQNorm: {1, hd}, kKNorm: {1, hd},
		kPostAttnNorm: {1, c.Dim}, kPostFFNNorm: {1, c.Dim},
	}
	s := shapes[kind]
	// The nine Llama tensors keep their streams of old, so Llama models are
	// the same bytes as before architectures were added.
	stream := uint64(1000 + b*nBlockKinds + kind)
	if kind >= nBlockKinds {
		stream = uint64(1<<24 + b*nAllKinds + kind)
	}
	return tensor{stream: stream, block: b, kind: kind, rows: s[0], cols: s[1], norm: isNormKind(kind), vec: s[0] == 1}
}

func (c Config) globalTensor(kind int) tensor {
	switch kind {
	case kEmbed:
		return tensor{stream: 1, block: -1, kind: kind, rows: c.Vocab, cols: c.Dim}
	case kNorm:
		return tensor{stream: 2, block: -1, kind: kind, rows: 1, cols: c.Dim, norm: true, vec: true}
	default:
		return tensor{stream: 3, block: -1, kind: kOutput, rows: c.Vocab, cols: c.Dim}
	}
}

// values generates the tensor's values [rows*cols], already rounded to what
// its dtype (tensorDType) can hold, so that a float32 file of the same
// model holds exactly the same numbers: f16/bf16 rounding, or the
// dequantized blocks of a quantized dtype (vectors are never quantized;
// they keep f16-exact values then).
func (c Config) values(t tensor) []float32 {
	v := c.rawValues(t)
	dt := c.tensorDType(t)
	if t.vec && c.DType.Quantized() {
		dt = swarm.DTypeF16
	}
	switch {
	case dt == swarm.DTypeF16:
		for i, x := range v {
			v[i] = float16.Fromfloat32(x).Float32()
		}
	case dt == swarm.DTypeBF16:
		for i, x := range v {
			v[i] = math.Float32frombits(uint32(bf16Bits(x)) << 16)
		}
	case dt.Quantized():
		dequantize(quantize(v, dt), dt, v)
	}
	return v
}

// rawValues generates the tensor's values before any rounding. Norm
// weights are 1 + N(0, 0.1^2) (gemma3: N(0, 0.1^2), the w of its (1 + w)
// scale); biases N(0, 0.5^2); matrices are N(0, 1/cols), the token
// embedding N(0, 1) (gemma3: N(0, 1/cols) like the others, for its scaled,
// tied embedding).
func (c Config) rawValues(t tensor) []float32 {
	rng := rand.New(rand.NewPCG(c.Seed, t.stream))
	v := make([]float32, t.rows*t.cols)
	std := 1 / math.Sqrt(float64(t.cols))
	if t.kind == kEmbed && !c.spec().gemma {
		std = 1 // gemma3: N(0, 1/Dim), so that the sqrt(Dim)-scaled embedding is N(0, 1)
	}
	shift := 1.0
	if c.spec().gemma {
		shift = 0
	}
	for i := range v {
		switch {
		case t.norm:
			v[i] = float32(shift + 0.1*rng.NormFloat64())
		case t.vec:
			v[i] = float32(0.5 * rng.NormFloat64())
		default:
			v[i] = float32(std * rng.NormFloat64())
		}
	}
	return v
}

// hfPermutation is the row order llama.cpp's convert_hf_to_gguf.py
// (LlamaModel.permute) and llama2.c's export.py apply to HF q_proj/k_proj
// weights: new row h*hd + 2i + j is HF row h*hd + j*hd/2 + i, turning
// rotate-half RoPE pairs into adjacent pairs.
func hfPermutation(nHeads, hd int) []int {
	perm := make([]int, nHeads*hd)
	for h := range nHeads {
		for i := range hd / 2 {
			for j := range 2 {
				perm[h*hd+2*i+j] = h*hd + j*(hd/2) + i
			}
		}
	}
	return perm
}

// ggufValues returns a tensor's values as llama.cpp's converter stores
// them: q/k rows permuted into adjacent pairs for normal-RoPE families
// (adjacentValues), as they are for NeoX ones; Gemma norms as 1 + w.
func (c Config) ggufValues(t tensor) []float32 {
	sp := c.spec()
	if !sp.neox {
		return c.adjacentValues(t)
	}
	v := c.values(t)
	if sp.gemma && t.norm {
		for i := range v {
			v[i]++
		}
	}
	return v
}

// adjacentValues returns a tensor's values with q/k rows permuted into
// adjacent-pair RoPE order (llama GGUF, llama2.c); other tensors are
// unchanged.
func (c Config) adjacentValues(t tensor) []float32 {
	return permuteRows(c.values(t), c.qkPerm(t), t.cols)
}

// qkPerm is hfPermutation for the rows of a block's q or k weight, nil for
// every other tensor.
func (c Config) qkPerm(t tensor) []int {
	switch {
	case t.block >= 0 && t.kind == kWQ:
		return hfPermutation(c.Heads, c.headDim())
	case t.block >= 0 && t.kind == kWK:
		return hfPermutation(c.KVHeads, c.headDim())
	}
	return nil
}

// permuteRows returns rows of rowLen elements in the order perm (new row i
// is old row perm[i]), or v itself when perm is nil.
func permuteRows[T any](v []T, perm []int, rowLen int) []T {
	if perm == nil {
		return v
	}
	out := make([]T, len(v))
	for i, p := range perm {
		copy(out[i*rowLen:(i+1)*rowLen], v[p*rowLen:(p+1)*rowLen])
	}
	return out
}

// bf16Bits rounds a float32 to bfloat16 (nearest even).
func bf16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// quantizeQ8_0 quantizes v (a multiple of 32 values) to GGML Q8_0 blocks
// the way ggml's quantize_row_q8_0_ref does: d = max|x|/127 (stored as f16),
// q = round(x/d).
func quantizeQ8_0(v []float32) []byte {
	out := make([]byte, 0, len(v)/32*34)
	for b := 0; b < len(v); b += 32 {
		var amax float32
		for _, x := range v[b : b+32] {
			amax = max(amax, float32(math.Abs(float64(x))))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		h := float16.Fromfloat32(d).Bits()
		out = append(out, byte(h), byte(h>>8))
		for _, x := range v[b : b+32] {
			out = append(out, byte(int8(math.Round(float64(x*id)))))
		}
	}
	return out
}

// dequantizeQ8_0 expands Q8_0 blocks into v.
func dequantizeQ8_0(q []byte, v []float32) {
	for b := range len(q) / 34 {
		blk := q[b*34 : (b+1)*34]
		d := float16.Frombits(uint16(blk[0]) | uint16(blk[1])<<8).Float32()
		for j := range 32 {
			v[b*32+j] = d * float32(int8(blk[2+j]))
		}
	}
}
