package swarm

import (
	"errors"
	"fmt"
)

// ErrBadModel is returned (wrapped) when a model description is inconsistent.
var ErrBadModel = errors.New("swarm: bad model")

// RopeScaling describes a RoPE frequency scaling scheme (Llama 3 style
// "llama3", or "linear"). A nil *RopeScaling in ModelInfo means none.
type RopeScaling struct {
	// Type is "linear" or "llama3".
	Type string `json:"type"`
	// Factor divides the frequencies (linear) or the low frequencies (llama3).
	Factor float64 `json:"factor"`
	// LowFreqFactor and HighFreqFactor bound the llama3 interpolation band.
	LowFreqFactor  float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor float64 `json:"high_freq_factor,omitempty"`
	// OriginalMaxPositions is the training context length (llama3).
	OriginalMaxPositions int `json:"original_max_position_embeddings,omitempty"`
}

// ModelInfo describes a decoder-only model of one of the supported
// architecture families (Llama, Mistral, Qwen2, Qwen3, Gemma 3): everything
// placement, admission and the wire protocol need to know about it,
// whatever file format it was loaded from.
type ModelInfo struct {
	// Name identifies the model in the swarm (e.g. "stories260K"); servers and
	// clients must agree on it.
	Name string `json:"name"`
	// Arch is the architecture family as the model file names it: "llama",
	// "mistral", "qwen2", "qwen3" or "gemma3" (blocks' architecture table).
	Arch string `json:"arch"`
	// NBlocks is the number of transformer blocks L.
	NBlocks int `json:"n_blocks"`
	// DModel is the hidden size; hidden states are [nTokens, DModel].
	DModel int `json:"d_model"`
	// NHeads is the number of query heads.
	NHeads int `json:"n_heads"`
	// NKVHeads is the number of key/value heads (grouped-query attention);
	// equal to NHeads for plain multi-head attention.
	NKVHeads int `json:"n_kv_heads"`
	// HeadDim is the size of one attention head (usually DModel/NHeads).
	HeadDim int `json:"head_dim"`
	// FFNDim is the inner size of the SwiGLU feed-forward network.
	FFNDim int `json:"ffn_dim"`
	// Vocab is the vocabulary size (rows of the embedding and LM head).
	Vocab int `json:"vocab"`
	// MaxSeqLen is the longest context the model was trained for, in tokens.
	MaxSeqLen int `json:"max_seq_len"`
	// RopeTheta is the RoPE base frequency (10000 for Llama 2).
	RopeTheta float64 `json:"rope_theta"`
	// RopeScaling is nil when the model uses plain RoPE.
	RopeScaling *RopeScaling `json:"rope_scaling,omitempty"`
	// SlidingWindow, when > 0, is the attention window of sliding-window
	// blocks in tokens: the query at position p attends to positions
	// p-SlidingWindow+1 .. p only (Gemma 3 local layers, Mistral v0.1). 0
	// means every block attends to the whole context.
	SlidingWindow int `json:"sliding_window,omitempty"`
	// SlidingPattern is the local:global layer pattern when SlidingWindow >
	// 0: block b is global (full attention) when (b+1)%SlidingPattern == 0
	// and sliding otherwise (Gemma 3: 6, five local blocks then one global;
	// llama.cpp's llama_hparams::set_swa_pattern). 0 makes every block
	// sliding.
	SlidingPattern int `json:"sliding_pattern,omitempty"`
	// NormEps is the RMSNorm epsilon.
	NormEps float64 `json:"norm_eps"`
	// TiedEmbeddings is true when the LM head reuses the token embedding.
	TiedEmbeddings bool `json:"tied_embeddings"`
	// DType is the storage dtype of the block weights.
	DType DType `json:"dtype"`
	// BlockBytes is s_m: the bytes of one block's weights as stored (paper
	// 003, eq. 2), exact per tensor dtype; where blocks differ (a Q4_K_M
	// file stores some blocks' attn_v and ffn_down in Q6_K) the largest.
	BlockBytes int64 `json:"block_bytes"`
	// CacheBytesPerToken is the attention-cache bytes one block needs per token
	// of one session: 2 * NKVHeads * HeadDim * bytes per cache element. The
	// paper's s_c is CacheBytesPerToken * (lI_max + l_max) (paper 003, eq. 2).
	// The cache dtype belongs to the engine: a model file's info carries the
	// CPU backend's float32 (what planning assumes before servers exist), an
	// engine's Info() and a server's ServerInfo its own backend's.
	CacheBytesPerToken int64 `json:"cache_bytes_per_token"`
	// BOS and EOS are the begin/end-of-sequence token ids; -1 when the
	// model has none (a byte-level BPE GGUF without bos_token_id).
	BOS int `json:"bos"`
	EOS int `json:"eos"`
}

// CacheBytes returns the attention-cache bytes one full-attention block
// needs for one session of maxLength tokens: s_c of paper 003 eq. (2) with
// lI_max + l_max = maxLength. Sliding-window blocks need less: use
// BlockCacheBytes and SpanCacheBytes wherever the blocks are known.
func (m ModelInfo) CacheBytes(maxLength int) int64 {
	return m.CacheBytesPerToken * int64(maxLength)
}

// IsSliding reports whether block b attends only to the last SlidingWindow
// positions (see SlidingPattern).
func (m ModelInfo) IsSliding(b int) bool {
	return m.SlidingWindow > 0 && (m.SlidingPattern <= 0 || (b+1)%m.SlidingPattern != 0)
}

// SlidingRewind is R, the positions a sliding-window block's attention
// cache keeps beyond its window: the cache is a ring of SlidingWindow + R
// positions, so a step may start up to R+1 positions before the session's
// cached length (a retry, a resent step, a short speculative rewind) and
// still find the SlidingWindow-1 earlier positions its first query
// attends to. A step further back than that fails (blocks.ErrPosition),
// except a restart at position 0. 64 positions cost 12.5% more than the
// window alone for Gemma 3 1B's 512-token window, 6% for 4B's 1024.
const SlidingRewind = 64

// CacheTokens returns the positions block b's attention cache holds for a
// session of maxLength tokens: maxLength, or for a sliding-window block
// min(maxLength, SlidingWindow + SlidingRewind), a ring that never needs
// positions further back than its window plus the rewind allowance.
func (m ModelInfo) CacheTokens(b, maxLength int) int {
	if m.IsSliding(b) {
		return min(maxLength, m.SlidingWindow+SlidingRewind)
	}
	return maxLength
}

// BlockCacheBytes returns the attention-cache bytes block b needs for one
// session of maxLength tokens: CacheBytesPerToken * CacheTokens(b,
// maxLength). This is s_c of paper 003 eq. (2) per block: the paper's one
// s_c for every block becomes s_c(b), smaller for sliding-window blocks
// (Gemma 3 local layers, Mistral v0.1), which never look further back than
// their window.
func (m ModelInfo) BlockCacheBytes(b, maxLength int) int64 {
	return m.CacheBytesPerToken * int64(m.CacheTokens(b, maxLength))
}

// SpanCacheBytes returns the attention-cache bytes the blocks of span need
// for one session of maxLength tokens: the sum of their BlockCacheBytes,
// sum_b s_c(b) in eq. (2)'s memory constraint. Admission reserves it per
// session, and a CPU engine's session allocates exactly this much.
func (m ModelInfo) SpanCacheBytes(span Span, maxLength int) int64 {
	var n int64
	for b := span.Start; b < span.End; b++ {
		n += m.BlockCacheBytes(b, maxLength)
	}
	return n
}

// Blocks returns the whole model as a span, [0, NBlocks).
func (m ModelInfo) Blocks() Span { return Span{Start: 0, End: m.NBlocks} }

// Validate checks the shape fields for consistency and returns an error
// wrapping ErrBadModel naming the first bad field.
func (m ModelInfo) Validate() error {
	check := func(ok bool, format string, args ...any) error {
		if ok {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrBadModel, fmt.Sprintf(format, args...))
	}
	for _, err := range []error{
		check(m.NBlocks > 0, "n_blocks = %d, want > 0", m.NBlocks),
		check(m.DModel > 0, "d_model = %d, want > 0", m.DModel),
		check(m.NHeads > 0, "n_heads = %d, want > 0", m.NHeads),
		check(m.NKVHeads > 0 && m.NHeads%max(m.NKVHeads, 1) == 0,
			"n_kv_heads = %d, want > 0 and dividing n_heads = %d", m.NKVHeads, m.NHeads),
		check(m.HeadDim > 0 && m.HeadDim%2 == 0, "head_dim = %d, want a positive even number", m.HeadDim),
		check(m.FFNDim > 0, "ffn_dim = %d, want > 0", m.FFNDim),
		check(m.Vocab > 0, "vocab = %d, want > 0", m.Vocab),
		check(m.NormEps > 0, "norm_eps = %g, want > 0", m.NormEps),
		check(m.RopeTheta > 0, "rope_theta = %g, want > 0", m.RopeTheta),
		check(m.SlidingWindow >= 0 && m.SlidingPattern >= 0,
			"sliding_window = %d and sliding_pattern = %d, want >= 0", m.SlidingWindow, m.SlidingPattern),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
