package blocks

import (
	"context"
	"errors"

	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/swarm"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrFormat marks a model file that is malformed, truncated or of an
	// unsupported kind; the wrapping message names the file and tensor.
	ErrFormat = errors.New("blocks: bad model file")
	// ErrPosition marks a Forward call at a position the session cannot take
	// (beyond its cached length or past its max length).
	ErrPosition = errors.New("blocks: bad position")
	// ErrClosed marks use of a closed session or engine.
	ErrClosed = errors.New("blocks: closed")
	// ErrArgument marks a call with an argument outside its documented range
	// (a span outside the engine's, a hidden-state slice of the wrong length,
	// an unknown token id, a bad sampler setting).
	ErrArgument = errors.New("blocks: bad argument")
)

// Engine computes one span of transformer blocks on the CPU for many
// independent sessions. It holds only the weights of its span (partial
// loading). Implementations are safe for concurrent use by different sessions.
type Engine interface {
	// Info describes the whole model the span belongs to.
	Info() swarm.ModelInfo
	// Span is the blocks whose weights are loaded.
	Span() swarm.Span
	// WeightBytes is the bytes of the loaded block weights, s_m * m_j.
	WeightBytes() int64
	// NewSession allocates attention caches for the blocks of sub (which must
	// lie inside Span()) sized for maxLength tokens. Its cache memory is
	// Info().SpanCacheBytes(sub, maxLength) bytes (sliding-window blocks
	// hold rings of window + swarm.SlidingRewind positions). It returns an error
	// wrapping ErrArgument for a bad sub-span or maxLength (< 1 or above
	// Info().MaxSeqLen) and ErrClosed after Close.
	NewSession(sub swarm.Span, maxLength int) (Session, error)
	// Close releases the weights, after waiting for running Forward calls.
	// Sessions should be closed first; those still open fail with ErrClosed.
	Close() error
}

// Session is one generation's attention caches over a sub-span of an Engine.
// A session is used by one goroutine at a time; different sessions run
// concurrently.
type Session interface {
	// Forward runs hidden states [nTokens, DModel] (row-major float32) at
	// positions pos .. pos+nTokens-1 through the session's blocks, in order,
	// and returns the output hidden states [nTokens, DModel]. pos may be less
	// than Len(): the cache is truncated to pos first (replay after failover);
	// with sliding-window blocks, at most swarm.SlidingRewind+1 positions
	// before Len() (or 0). The input slice is not modified. It returns errors
	// wrapping ErrPosition if pos > Len(), pos+nTokens > max length or pos
	// goes back further than the sliding-window caches hold (the caches are
	// then untouched), ErrArgument if nTokens < 1 or len(hidden) !=
	// nTokens*DModel, ErrClosed after Close of the session or engine, and
	// ctx's error when ctx ends before the last block.
	Forward(ctx context.Context, pos int, hidden []float32, nTokens int) ([]float32, error)
	// Len is the number of positions held in the attention caches.
	Len() int
	// Span is the blocks this session processes.
	Span() swarm.Span
	// CacheBytes is the attention-cache memory the session is sized and
	// admitted for, bytes: enough for every position up to its max length.
	CacheBytes() int64
	// HeldBytes is the attention-cache memory it holds now, bytes: caches
	// are allocated in pages as positions are written, so an idle or short
	// session costs what it filled (at most CacheBytes).
	HeldBytes() int64
	// Close releases the caches; further calls return ErrClosed.
	Close() error
}

// Head is the client side of a model: token embedding, final RMSNorm, LM head
// and tokenizer. It never loads block weights. Implementations are safe for
// concurrent use. Tokenizer() may be nil when the model came without one.
type Head interface {
	// Info describes the model.
	Info() swarm.ModelInfo
	// Tokenizer encodes prompts and decodes generated tokens.
	Tokenizer() tokenizer.Tokenizer
	// Embed looks up tokens and returns hidden states [len(tokens), DModel];
	// an id outside [0, Vocab) gives an error wrapping ErrArgument.
	Embed(tokens []int) ([]float32, error)
	// Logits applies the final norm and LM head to one hidden state [DModel]
	// and returns logits [Vocab]; a hidden state of another length gives an
	// error wrapping ErrArgument.
	Logits(hidden []float32) ([]float32, error)
}

// Step is one session's share of a batched forward pass: hidden states
// [NTokens, DModel] (row-major float32) at positions Pos .. Pos+NTokens-1,
// with the same meaning and limits as the arguments of Session.Forward.
type Step struct {
	Session Session
	Pos     int
	Hidden  []float32
	NTokens int
}

// StepResult is the outcome of one Step: the output hidden states
// [NTokens, DModel], or the error Session.Forward would have returned.
type StepResult struct {
	Hidden []float32
	Err    error
}

// BatchEngine is an Engine that runs the steps of many sessions in one pass
// over its weights: a batch of b decode steps reads each weight once instead
// of b times. The CPU engine implements it.
type BatchEngine interface {
	Engine
	// ForwardBatch runs every step through its session's blocks and returns
	// one result per step, in order. The sessions must be distinct sessions
	// of this engine (a session of another engine or one listed twice gets
	// an error wrapping ErrArgument), each used by no other goroutine during
	// the call. A step's result is bit for bit what Session.Forward returns
	// for it alone, whatever the other steps of the batch are. When ctx
	// ends before the last block, every step not yet failed gets ctx's error
	// and its session's Len() is Pos (ring caches as after Session.Forward
	// ended the same way).
	ForwardBatch(ctx context.Context, steps []Step) []StepResult
}
