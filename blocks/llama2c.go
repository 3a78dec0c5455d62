package blocks

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/swarmllm/swarm/swarm"
)

// llama2.c checkpoint formats (karpathy/llama2.c export.py):
//   - version 0 ("legacy_export"): a 28-byte header of 7 little-endian int32
//     (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len),
//     then float32 arrays token_embedding, rms_att, wq, wk, wv, wo, rms_ffn,
//     w1, w2, w3, rms_final, freq_cis_real, freq_cis_imag and, when
//     vocab_size < 0, the unshared classifier wcls. Every matrix is
//     [out][in] and every per-block array holds all blocks back to back.
//   - version 1 ("version1_export"): a 256-byte header starting with magic
//     "ak42" (0x616b3432), int32 version 1, the same 7 int32, a uint8
//     shared_classifier flag; then float32 rms_att, rms_ffn, rms_final,
//     token_embedding, wq, wk, wv, wo, w1, w2, w3 and wcls unless shared.
//
// Version 2 (int8 with float32 group scales) is not supported.
// Both supported versions use adjacent-pair RoPE with theta 10000 and
// RMSNorm eps 1e-5; BOS is 1 and EOS is 2.
const (
	llama2cMagic      = 0x616b3432
	llama2cV0Header   = 28
	llama2cV1Header   = 256
	llama2cMaxDim     = 1 << 20 // sanity bound on header fields
	llama2cTokenizerF = "tokenizer.bin"
)

// llama2cHeader is the model shape from a llama2.c header.
type llama2cHeader struct {
	version                                     int
	dim, hidden, layers, heads, kvHeads, seqLen int
	vocab                                       int  // absolute value
	shared                                      bool // classifier tied to the embedding
}

// parseLlama2CHeader decodes the header at the start of b (at least 256
// bytes, or the whole file if shorter). It never panics on bad input.
func parseLlama2CHeader(b []byte) (llama2cHeader, error) {
	var h llama2cHeader
	if len(b) < llama2cV0Header {
		return h, fmt.Errorf("header of %d bytes, want at least %d", len(b), llama2cV0Header)
	}
	le := binary.LittleEndian
	ints := b
	if le.Uint32(b) == llama2cMagic {
		if len(b) < llama2cV1Header {
			return h, fmt.Errorf("versioned header of %d bytes, want %d", len(b), llama2cV1Header)
		}
		h.version = int(int32(le.Uint32(b[4:])))
		if h.version != 1 {
			return h, fmt.Errorf("llama2.c checkpoint version %d is not supported (want 0 or 1; version 2 int8 checkpoints: convert to GGUF Q8_0)", h.version)
		}
		ints = b[8:]
		h.shared = b[8+28] != 0
	}
	v := make([]int, 7)
	for i := range v {
		v[i] = int(int32(le.Uint32(ints[4*i:])))
	}
	h.dim, h.hidden, h.layers, h.heads, h.kvHeads, h.vocab, h.seqLen = v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	if h.version == 0 {
		h.shared = h.vocab > 0
	}
	if h.vocab < 0 {
		if h.version != 0 {
			return h, fmt.Errorf("vocab_size %d, want > 0", h.vocab)
		}
		h.vocab = -h.vocab
	}
	names := []string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
	for i, x := range []int{h.dim, h.hidden, h.layers, h.heads, h.kvHeads, h.vocab, h.seqLen} {
		if x <= 0 || x > llama2cMaxDim {
			return h, fmt.Errorf("%s = %d, want 1..%d", names[i], x, llama2cMaxDim)
		}
	}
	if h.dim%h.heads != 0 || (h.dim/h.heads)%2 != 0 {
		return h, fmt.Errorf("dim %d and n_heads %d give head size %d/%d, want an even integer", h.dim, h.heads, h.dim, h.heads)
	}
	if h.heads%h.kvHeads != 0 {
		return h, fmt.Errorf("n_kv_heads %d does not divide n_heads %d", h.kvHeads, h.heads)
	}
	return h, nil
}

// openLlama2C reads a llama2.c checkpoint's header and lays out its tensors.
func openLlama2C(m *Model, cfg *config, path string) error {
	m.format = "llama2c"
	f, err := m.open(cfg, path)
	if err != nil {
		return err
	}
	buf := make([]byte, min(f.size, llama2cV1Header))
	if _, err := f.f.ReadAt(buf, 0); err != nil {
		return fmt.Errorf("%w: %s: reading the header: %w", ErrFormat, path, err)
	}
	h, err := parseLlama2CHeader(buf)
	if err != nil {
		return fmt.Errorf("%w: %s: llama2.c header: %w", ErrFormat, path, err)
	}
	hs := h.dim / h.heads
	kvDim := h.kvHeads * hs
	m.arch = archLlama
	m.info = swarm.ModelInfo{
		Name:           strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)),
		Arch:           archLlama.name,
		NBlocks:        h.layers,
		DModel:         h.dim,
		NHeads:         h.heads,
		NKVHeads:       h.kvHeads,
		HeadDim:        hs,
		FFNDim:         h.hidden,
		Vocab:          h.vocab,
		MaxSeqLen:      h.seqLen,
		RopeTheta:      10000,
		NormEps:        1e-5,
		TiedEmbeddings: h.shared,
		BOS:            1,
		EOS:            2,
	}

	// Lay the float32 arrays out in file order.
	off := int64(llama2cV0Header)
	if h.version == 1 {
		off = llama2cV1Header
	}
	L := h.layers
	type arr struct {
		name       string
		rows, cols int  // per block (or whole, for globals)
		perBlock   bool // one per block, back to back
		idx        Slot // block tensor index, or -1
		global     *tensorRef
	}
	var embed, outNorm, wcls tensorRef
	at := func(name string, rows, cols int, perBlock bool, idx Slot, g *tensorRef) arr {
		return arr{name: name, rows: rows, cols: cols, perBlock: perBlock, idx: idx, global: g}
	}
	var order []arr
	emb := at("token_embedding_table", h.vocab, h.dim, false, -1, &embed)
	blocksPart := []arr{
		at("wq", h.dim, h.dim, true, SlotWQ, nil), at("wk", kvDim, h.dim, true, SlotWK, nil),
		at("wv", kvDim, h.dim, true, SlotWV, nil), at("wo", h.dim, h.dim, true, SlotWO, nil),
	}
	ffnPart := []arr{
		at("w1", h.hidden, h.dim, true, SlotW1, nil), at("w2", h.dim, h.hidden, true, SlotW2, nil),
		at("w3", h.hidden, h.dim, true, SlotW3, nil),
	}
	rmsAtt := at("rms_att_weight", 1, h.dim, true, SlotAttnNorm, nil)
	rmsFFN := at("rms_ffn_weight", 1, h.dim, true, SlotFFNNorm, nil)
	rmsFinal := at("rms_final_weight", 1, h.dim, false, -1, &outNorm)
	freqs := at("freq_cis", 2, h.seqLen*hs/2, false, -1, nil)
	switch h.version {
	case 0:
		order = append(order, emb, rmsAtt)
		order = append(order, blocksPart...)
		order = append(order, rmsFFN)
		order = append(order, ffnPart...)
		order = append(order, rmsFinal, freqs)
	case 1:
		order = append(order, rmsAtt, rmsFFN, rmsFinal, emb)
		order = append(order, blocksPart...)
		order = append(order, ffnPart...)
	}
	if !h.shared {
		order = append(order, at("wcls", h.vocab, h.dim, false, -1, &wcls))
	}
	m.layers = make([][NumSlots]tensorRef, L)
	for _, a := range order {
		size := 4 * int64(a.rows) * int64(a.cols)
		n := 1
		if a.perBlock {
			n = L
		}
		for b := range n {
			t := tensorRef{name: a.name, file: f, offset: off, dtype: swarm.DTypeF32, rows: a.rows, cols: a.cols}
			if a.perBlock {
				t.name = fmt.Sprintf("%s[%d]", a.name, b)
				m.layers[b][a.idx] = t
			} else if a.global != nil {
				*a.global = t
			}
			if off+size > f.size {
				return fmt.Errorf("%w: %s: tensor %s needs bytes %d..%d but the file has %d bytes (truncated?)",
					ErrFormat, path, t.name, off, off+size, f.size)
			}
			off += size
		}
	}
	if off < f.size {
		return fmt.Errorf("%w: %s: %d bytes after the last tensor (want a file of exactly %d bytes for this header)", ErrFormat, path, f.size-off, off)
	}
	m.embed, m.outputNorm = embed, outNorm
	if !h.shared {
		m.output = &wcls
	}

	switch {
	case cfg.tokenizerPath != "":
	default:
		p := filepath.Join(filepath.Dir(path), llama2cTokenizerF)
		if _, err := os.Stat(p); err == nil {
			m.tokenizerPath = p
		}
	}
	m.loadTok = loadLlama2CTokenizer
	return nil
}
