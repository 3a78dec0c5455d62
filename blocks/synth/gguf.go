package synth

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/x448/float16"

	"github.com/swarmllm/swarm/swarm"
)

// A GGUF v3 writer following https://github.com/ggml-org/ggml/blob/master/docs/gguf.md:
// magic "GGUF", uint32 version 3, uint64 tensor count, uint64 metadata count,
// the metadata key/values, the tensor infos (name, n_dims, dims innermost
// first, ggml type, data offset), padding to the alignment, then the tensor
// data, each tensor aligned. Everything little-endian.

// GGUF metadata value types.
const (
	ggufU32    = 4
	ggufI32    = 5
	ggufF32    = 6
	ggufBool   = 7
	ggufString = 8
	ggufArray  = 9
)

const ggufAlignment = 32

type ggufKV struct {
	key string
	val any // uint32, int32, float32, bool, string, []string, []float32, []int32
}

type ggufTensor struct {
	name   string
	t      tensor
	dtype  swarm.DType
	offset int64
}

// le is a little-endian writer that remembers the first error.
type le struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (w *le) bytes(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.n += int64(n)
	w.err = err
}

func (w *le) u32(v uint32) { w.bytes(binary.LittleEndian.AppendUint32(nil, v)) }
func (w *le) u64(v uint64) { w.bytes(binary.LittleEndian.AppendUint64(nil, v)) }
func (w *le) str(s string) { w.u64(uint64(len(s))); w.bytes([]byte(s)) }

func (w *le) pad(align int64) {
	if r := w.n % align; r != 0 {
		w.bytes(make([]byte, align-r))
	}
}

func (w *le) value(v any) {
	switch v := v.(type) {
	case uint32:
		w.u32(ggufU32)
		w.u32(v)
	case int32:
		w.u32(ggufI32)
		w.u32(uint32(v))
	case float32:
		w.u32(ggufF32)
		w.u32(math.Float32bits(v))
	case bool:
		w.u32(ggufBool)
		b := byte(0)
		if v {
			b = 1
		}
		w.bytes([]byte{b})
	case string:
		w.u32(ggufString)
		w.str(v)
	case []string:
		w.u32(ggufArray)
		w.u32(ggufString)
		w.u64(uint64(len(v)))
		for _, s := range v {
			w.str(s)
		}
	case []float32:
		w.u32(ggufArray)
		w.u32(ggufF32)
		w.u64(uint64(len(v)))
		for _, x := range v {
			w.u32(math.Float32bits(x))
		}
	case []int32:
		w.u32(ggufArray)
		w.u32(ggufI32)
		w.u64(uint64(len(v)))
		for _, x := range v {
			w.u32(uint32(x))
		}
	default:
		w.err = fmt.Errorf("synth: gguf value of type %T", v)
	}
}

// WriteGGUF writes the model as a GGUF v3 file with its tokenizer embedded
// (tokenizer.ggml.model "llama"), as llama.cpp's convert_hf_to_gguf.py
// would convert the Hugging Face directory WriteHF writes: metadata keys
// prefixed with general.architecture (mistral is written as "llama"),
// matrices in c.DType (or as c.Mix says), 1-D tensors (norms, biases) in F32, q/k rows
// permuted into adjacent-pair RoPE order for llama and mistral only, and
// Gemma norm weights stored as 1 + w.
func WriteGGUF(path string, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c = c.withDefaults()
	pieces, scores, types, err := Vocab(c.Vocab)
	if err != nil {
		return err
	}
	sp := c.spec()
	p := sp.gguf + "."
	kvs := []ggufKV{
		{"general.architecture", sp.gguf},
		{"general.name", c.Name},
		{"general.alignment", uint32(ggufAlignment)},
		{"general.file_type", c.fileType()},
		{p + "context_length", uint32(c.MaxSeqLen)},
		{p + "embedding_length", uint32(c.Dim)},
		{p + "feed_forward_length", uint32(c.FFN)},
		{p + "block_count", uint32(c.Layers)},
		{p + "attention.head_count", uint32(c.Heads)},
		{p + "attention.head_count_kv", uint32(c.KVHeads)},
		{p + "rope.dimension_count", uint32(c.headDim())},
		{p + "rope.freq_base", float32(c.RopeTheta)},
		{p + "attention.layer_norm_rms_epsilon", float32(c.NormEps)},
	}
	if c.headDim()*c.Heads != c.Dim || c.Arch == ArchQwen3 || c.Arch == ArchGemma3 {
		// The converter writes the head size when config.json has
		// head_dim and llama.cpp needs it when it is not dim/heads.
		kvs = append(kvs, ggufKV{p + "attention.key_length", uint32(c.headDim())},
			ggufKV{p + "attention.value_length", uint32(c.headDim())})
	}
	kvs = append(kvs, c.ggufArchKVs()...)
	kvs = append(kvs, []ggufKV{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", pieces},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(bosID)},
		{"tokenizer.ggml.eos_token_id", uint32(eosID)},
		{"tokenizer.ggml.unknown_token_id", uint32(unkID)},
	}...)
	if c.ChatTemplate != "" {
		kvs = append(kvs, ggufKV{"tokenizer.chat_template", c.ChatTemplate})
	}
	if kvs, err = withRealTokenizer(kvs, c); err != nil {
		return err
	}
	var ts []ggufTensor
	addT := func(name string, t tensor) {
		dt := c.tensorDType(t)
		if t.vec {
			dt = swarm.DTypeF32
		}
		ts = append(ts, ggufTensor{name: name, t: t, dtype: dt})
	}
	addT("token_embd.weight", c.globalTensor(kEmbed))
	addT("output_norm.weight", c.globalTensor(kNorm))
	if !c.Tied {
		addT("output.weight", c.globalTensor(kOutput))
	}
	for b := range c.Layers {
		for _, k := range sp.kinds {
			name, _ := sp.kindNames(k)
			addT(fmt.Sprintf("blk.%d.%s", b, name), c.blockTensor(b, k))
		}
	}
	var off int64
	for i := range ts {
		ts[i].offset = off
		off += ts[i].dtype.Bytes(int64(ts[i].t.rows) * int64(ts[i].t.cols))
		off = (off + ggufAlignment - 1) / ggufAlignment * ggufAlignment
	}

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	w := &le{w: bufio.NewWriterSize(f, 1<<20)}
	w.bytes([]byte("GGUF"))
	w.u32(3)
	w.u64(uint64(len(ts)))
	w.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		w.str(kv.key)
		w.value(kv.val)
	}
	for _, t := range ts {
		w.str(t.name)
		if t.t.rows == 1 {
			w.u32(1)
			w.u64(uint64(t.t.cols))
		} else {
			w.u32(2)
			w.u64(uint64(t.t.cols))
			w.u64(uint64(t.t.rows))
		}
		w.u32(ggmlTypes[t.dtype])
		w.u64(uint64(t.offset))
	}
	w.pad(ggufAlignment)
	for _, t := range ts {
		w.bytes(c.ggufData(t.t, t.dtype))
		w.pad(ggufAlignment)
	}
	return finish(f, w)
}

// ggufData is a tensor's stored bytes in dtype dt. Quantized tensors are
// quantized from the unrounded values (values() holds their dequantized
// blocks), rows in the order ggufValues gives them.
func (c Config) ggufData(t tensor, dt swarm.DType) []byte {
	if !dt.Quantized() {
		return encode(c.ggufValues(t), dt)
	}
	var perm []int
	if !c.spec().neox {
		perm = c.qkPerm(t)
	}
	return permuteRows(quantize(c.rawValues(t), dt), perm, int(dt.Bytes(int64(t.cols))))
}

// encode stores float32 values as f32, f16 or bf16, little-endian.
func encode(v []float32, dt swarm.DType) []byte {
	switch dt {
	case swarm.DTypeF16:
		out := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(out[2*i:], float16.Fromfloat32(x).Bits())
		}
		return out
	case swarm.DTypeBF16:
		out := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(out[2*i:], bf16Bits(x))
		}
		return out
	}
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// finish flushes and closes a written file, returning the first error.
func finish(f *os.File, w *le) error {
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if err := f.Close(); w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return fmt.Errorf("synth: writing %s: %w", f.Name(), w.err)
	}
	return nil
}
