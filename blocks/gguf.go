package blocks

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/swarm"
)

// GGUF v3 (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): the
// header, metadata and tensor infos are parsed by gguf-parser-go; tensor data
// is read here by offset. Tensor dims are listed innermost first, so a
// matrix [rows, cols] is stored with dims [cols, rows]. The architecture
// (general.architecture) is looked up in the architecture table, which
// names its keys and tensors. llama.cpp's converters permute Hugging Face
// q/k rows into adjacent-pair RoPE order (the engine's own layout) only for
// the families llama.cpp runs with normal RoPE (llama); NeoX families keep
// rotate-half rows, which are permuted on load (archDesc.ggufNeoX).

// ggufMagic is the first four bytes of a GGUF file.
var ggufMagic = []byte("GGUF")

// isGGUF reports whether the file at path starts with the GGUF magic.
func isGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4)
	if _, err := io.ReadFull(f, b); err != nil {
		return false
	}
	return bytes.Equal(b, ggufMagic)
}

// parseGGUF runs gguf-parser-go, turning the panics it raises on some
// malformed files into errors.
func parseGGUF(path string) (gf *gguf.GGUFFile, err error) {
	defer func() {
		if r := recover(); r != nil {
			gf, err = nil, fmt.Errorf("malformed header: %v", r)
		}
	}()
	return gguf.ParseGGUFFile(path, gguf.UseMMap()) // unbuffered reads take seconds over 100k-token vocabularies
}

// ggufMeta reads typed metadata values, remembering the first error.
type ggufMeta struct {
	kvs  gguf.GGUFMetadataKVs
	path string
	err  error
}

func (g *ggufMeta) number(key string, def float64, required bool) float64 {
	kv, ok := g.kvs.Get(key)
	if !ok {
		if required && g.err == nil {
			g.err = fmt.Errorf("%w: %s: metadata key %s is missing", ErrFormat, g.path, key)
		}
		return def
	}
	if !kv.ValueType.IsNumeric() {
		if g.err == nil {
			g.err = fmt.Errorf("%w: %s: metadata key %s holds a %v, want a number", ErrFormat, g.path, key, kv.ValueType)
		}
		return def
	}
	if kv.ValueType == gguf.GGUFMetadataValueTypeFloat32 {
		// Report 1e-05, not 9.999999747378752e-06: the shortest decimal
		// that rounds to the stored float32.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(gguf.ValueNumeric[float64](kv), 'g', -1, 32), 64)
		return v
	}
	return gguf.ValueNumeric[float64](kv)
}

func (g *ggufMeta) integer(key string, def int, required bool) int {
	v := g.number(key, float64(def), required)
	if v < 0 || v > 1<<40 || v != float64(int64(v)) {
		if g.err == nil {
			g.err = fmt.Errorf("%w: %s: metadata key %s = %g, want a non-negative integer", ErrFormat, g.path, key, v)
		}
		return def
	}
	return int(v)
}

func (g *ggufMeta) str(key string) string {
	kv, ok := g.kvs.Get(key)
	if !ok || kv.ValueType != gguf.GGUFMetadataValueTypeString {
		return ""
	}
	return kv.ValueString()
}

// ggmlDTypes maps the GGML tensor types the engine computes with.
var ggmlDTypes = map[gguf.GGMLType]swarm.DType{
	gguf.GGMLTypeF32:    swarm.DTypeF32,
	gguf.GGMLTypeF16:    swarm.DTypeF16,
	gguf.GGMLTypeBF16:   swarm.DTypeBF16,
	gguf.GGMLTypeQ8_0:   swarm.DTypeQ8_0,
	gguf.GGMLTypeQ4_0:   swarm.DTypeQ4_0,
	gguf.GGMLTypeQ4_1:   swarm.DTypeQ4_1,
	gguf.GGMLTypeQ5_0:   swarm.DTypeQ5_0,
	gguf.GGMLTypeQ5_1:   swarm.DTypeQ5_1,
	gguf.GGMLTypeQ2_K:   swarm.DTypeQ2_K,
	gguf.GGMLTypeQ3_K:   swarm.DTypeQ3_K,
	gguf.GGMLTypeQ4_K:   swarm.DTypeQ4_K,
	gguf.GGMLTypeQ5_K:   swarm.DTypeQ5_K,
	gguf.GGMLTypeQ6_K:   swarm.DTypeQ6_K,
	gguf.GGMLTypeIQ4_NL: swarm.DTypeIQ4_NL,
	gguf.GGMLTypeIQ4_XS: swarm.DTypeIQ4_XS,
}

// ggmlTypeNames lists the accepted GGML types for error messages.
const ggmlTypeNames = "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL or IQ4_XS"

// openGGUF parses a GGUF file's metadata and tensor infos.
func openGGUF(m *Model, cfg *config, path string) error {
	m.format = "gguf"
	gf, err := parseGGUF(path)
	if err != nil {
		if terr := diagnoseTruncatedGGUF(path, err); terr != nil {
			return terr
		}
		return fmt.Errorf("%w: %s: %w", ErrFormat, path, err)
	}
	if gf.Header.Magic != gguf.GGUFMagicGGUFLe {
		return fmt.Errorf("%w: %s: big-endian GGUF files are not supported", ErrFormat, path)
	}
	if len(gf.SplitPaddings) > 1 {
		return fmt.Errorf("%w: %s: split GGUF files are not supported (merge them with llama-gguf-split --merge)", ErrFormat, path)
	}
	f, err := m.open(cfg, path)
	if err != nil {
		return err
	}
	g := &ggufMeta{kvs: gf.Header.MetadataKV, path: path}
	arch := g.str("general.architecture")
	a, err := archForGGUF(arch)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrFormat, path, err)
	}
	m.arch = a
	p := arch + "."
	info := swarm.ModelInfo{
		Arch:      a.name,
		NBlocks:   g.integer(p+"block_count", 0, true),
		DModel:    g.integer(p+"embedding_length", 0, true),
		NHeads:    g.integer(p+"attention.head_count", 0, true),
		FFNDim:    g.integer(p+"feed_forward_length", 0, true),
		MaxSeqLen: g.integer(p+"context_length", 0, false),
		RopeTheta: g.number(p+"rope.freq_base", 10000, false),
		NormEps:   g.number(p+"attention.layer_norm_rms_epsilon", 1e-5, false),
	}
	// Without ids in the file: llama.cpp's SentencePiece defaults (BOS 1,
	// EOS 2) for "llama" vocabularies (and files without one, like
	// stories260K's); none (-1) for byte-level BPE ("gpt2": Qwen has no BOS,
	// and its ids are nowhere near 1 and 2).
	bos, eos := 1, 2
	if g.str("tokenizer.ggml.model") == "gpt2" {
		bos, eos = -1, -1
	}
	info.BOS, info.EOS = bos, eos
	if _, ok := g.kvs.Get("tokenizer.ggml.bos_token_id"); ok {
		info.BOS = g.integer("tokenizer.ggml.bos_token_id", 0, false)
	}
	if _, ok := g.kvs.Get("tokenizer.ggml.eos_token_id"); ok {
		info.EOS = g.integer("tokenizer.ggml.eos_token_id", 0, false)
	}
	info.NKVHeads = g.integer(p+"attention.head_count_kv", info.NHeads, false)
	if info.NHeads > 0 {
		info.HeadDim = g.integer(p+"attention.key_length", info.DModel/info.NHeads, false)
	}
	if vd := g.integer(p+"attention.value_length", info.HeadDim, false); vd != info.HeadDim && g.err == nil {
		return fmt.Errorf("%w: %s: attention.value_length %d, want key_length %d (different value and key head sizes are not supported)", ErrFormat, path, vd, info.HeadDim)
	}
	if rd := g.integer(p+"rope.dimension_count", info.HeadDim, false); rd != info.HeadDim && g.err == nil {
		return fmt.Errorf("%w: %s: rope.dimension_count %d, want head_dim %d (partial rotary is not supported)", ErrFormat, path, rd, info.HeadDim)
	}
	switch st := g.str(p + "rope.scaling.type"); st {
	case "", "none":
	case "linear":
		info.RopeScaling = &swarm.RopeScaling{Type: "linear", Factor: g.number(p+"rope.scaling.factor", 0, true)}
	default:
		return fmt.Errorf("%w: %s: rope.scaling.type %q is not supported (want none or linear)", ErrFormat, path, st)
	}
	if g.err != nil {
		return g.err
	}
	if a.ggufHyper != nil {
		herr := a.ggufHyper(g, p, &info, &m.params)
		if g.err != nil {
			return g.err // a missing or mistyped key, already naming the file
		}
		if herr != nil {
			return fmt.Errorf("%w: %s: %w", ErrFormat, path, herr)
		}
	}
	info.Name = g.str("general.name")
	if info.Name == "" || info.Name == arch {
		info.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}

	ref := func(name string, required bool) (*tensorRef, error) {
		ti, ok := gf.TensorInfos.Get(name)
		if !ok {
			if required {
				return nil, fmt.Errorf("%w: %s: tensor %s is missing", ErrFormat, path, name)
			}
			return nil, nil
		}
		dt, ok := ggmlDTypes[ti.Type]
		if !ok {
			return nil, fmt.Errorf("%w: %s: tensor %s has type %v, want %s", ErrFormat, path, name, ti.Type, ggmlTypeNames)
		}
		t := &tensorRef{name: name, file: f, offset: gf.TensorDataStartOffset + int64(ti.Offset), dtype: dt}
		switch {
		case len(ti.Dimensions) == 1 && ti.Dimensions[0] <= 1<<40:
			t.rows, t.cols = 1, int(ti.Dimensions[0])
		case len(ti.Dimensions) == 2 && ti.Dimensions[0] <= 1<<40 && ti.Dimensions[1] <= 1<<40:
			t.rows, t.cols = int(ti.Dimensions[1]), int(ti.Dimensions[0])
		default:
			return nil, fmt.Errorf("%w: %s: tensor %s has dims %v, want 1 or 2 dims", ErrFormat, path, name, ti.Dimensions)
		}
		if ti.Offset > 1<<62 {
			return nil, fmt.Errorf("%w: %s: tensor %s has offset %d past any file", ErrFormat, path, name, ti.Offset)
		}
		return t, nil
	}
	embed, err := ref("token_embd.weight", true)
	if err != nil {
		return err
	}
	info.Vocab = embed.rows
	m.embed = *embed
	norm, err := ref("output_norm.weight", true)
	if err != nil {
		return err
	}
	m.outputNorm = *norm
	if m.output, err = ref("output.weight", false); err != nil {
		return err
	}
	info.TiedEmbeddings = m.output == nil
	if m.ropeFreqs, err = ref("rope_freqs.weight", false); err != nil {
		return err
	}
	if info.NBlocks > 1<<16 {
		return fmt.Errorf("%w: %s: block_count %d is implausible", ErrFormat, path, info.NBlocks)
	}
	m.layers = make([][NumSlots]tensorRef, info.NBlocks)
	for b := range info.NBlocks {
		for _, tn := range a.tensors {
			t, err := ref(fmt.Sprintf("blk.%d.%s", b, tn.gguf), true)
			if err != nil {
				return err
			}
			if a.ggufNeoX {
				t.permuteHeads = ropeHeads(tn.slot, &info)
			}
			m.layers[b][tn.slot] = *t
		}
	}
	m.info = info
	if _, ok := gf.Header.MetadataKV.Get("tokenizer.ggml.tokens"); ok {
		// The tokenizer is read from the metadata parsed here, not parsed
		// again from the file.
		m.tokenizerPath = path
		m.loadTok = func(string, int) (tokenizer.Tokenizer, error) {
			t, err := tokenizer.FromGGUFFile(gf, path)
			if err != nil {
				return nil, err
			}
			return t, nil
		}
	}
	m.chatTemplate = ggufChatTemplate(path, gf.Header.MetadataKV)
	return nil
}

// diagnoseTruncatedGGUF names the first tensor that lies past the end of a
// truncated GGUF file, or returns nil if perr is not about truncation.
// gguf-parser-go refuses such a file before returning its tensor infos
// ("tensor data needs N bytes but only M follow the header"), so the header
// is parsed again from a sparse copy extended to the declared size.
func diagnoseTruncatedGGUF(path string, perr error) error {
	msg := perr.Error()
	i := strings.Index(msg, "tensor data needs ")
	if i < 0 {
		return nil
	}
	var need, held int64
	if _, err := fmt.Sscanf(msg[i:], "tensor data needs %d bytes but only %d follow the header", &need, &held); err != nil {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer src.Close()
	st, err := src.Stat()
	headerEnd := st.Size() - held
	if err != nil || held < 0 || headerEnd < 0 || need < held || need > 1<<50 {
		return nil
	}
	tmp, err := os.CreateTemp("", "swarm-gguf-header-*.gguf")
	if err != nil {
		return nil
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, io.NewSectionReader(src, 0, headerEnd))
	if err == nil {
		err = tmp.Truncate(headerEnd + need)
	}
	if cerr := tmp.Close(); err != nil || cerr != nil {
		return nil
	}
	gf, err := parseGGUF(tmp.Name())
	if err != nil {
		return nil
	}
	var first *gguf.GGUFTensorInfo
	for k := range gf.TensorInfos {
		ti := &gf.TensorInfos[k]
		if int64(ti.Offset+ti.Bytes()) > held && (first == nil || ti.Offset < first.Offset) {
			first = ti
		}
	}
	if first == nil {
		return nil
	}
	start := headerEnd + int64(first.Offset)
	return fmt.Errorf("%w: %s: tensor %s needs bytes %d..%d but the file has %d bytes (truncated?)",
		ErrFormat, path, first.Name, start, start+int64(first.Bytes()), st.Size())
}
