package blocks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// ErrNoTokenizer: text generation needs a tokenizer and the model came
// without one (a llama2.c checkpoint without tokenizer.bin beside it).
var ErrNoTokenizer = errors.New("the model comes without a tokenizer")

// Completion is what GenerateText produced.
type Completion struct {
	// PromptIDs are the prompt's token ids, special tokens included.
	PromptIDs []int `json:"prompt_ids"`
	// IDs are the generated ids, without the end-of-generation id.
	IDs []int `json:"ids"`
	// Text is the generated text (IDs decoded after the prompt).
	Text string `json:"text"`
	// TTFT is the time from the start of generation to the first token;
	// Total to the last one.
	TTFT  time.Duration `json:"-"`
	Total time.Duration `json:"-"`
}

// TPOT is the mean time per output token after the first (0 for fewer
// than two tokens).
func (c Completion) TPOT() time.Duration {
	if len(c.IDs) < 2 {
		return 0
	}
	return (c.Total - c.TTFT) / time.Duration(len(c.IDs)-1)
}

// Runner returns a Forwarder over all blocks of a model for one generation
// of up to maxLength positions, and a function that releases it: a local
// Session, or a client session over a chain of servers.
type Runner func(maxLength int) (Forwarder, func() error, error)

// GenerateText encodes prompt with head's tokenizer (with the special
// tokens the model puts before a text: BOS for llama2.c, Llama and Gemma,
// none for Qwen), caps maxTokens to the model's context (0: fill it, as
// run.c caps its steps at seq_len), opens a Forwarder with run and
// generates (Generate), calling onPiece with the echoed prompt first
// (PromptText) and then each token's text as soon as it is sampled.
//
// Errors wrap ErrArgument for a head without a tokenizer (and
// ErrNoTokenizer), an empty
// encoding or a prompt longer than the context; otherwise they are run's,
// Generate's or onPiece's. On error the Completion holds what was generated.
func GenerateText(ctx context.Context, head Head, run Runner, prompt string, maxTokens int, sampler *Sampler, onPiece func(string) error) (Completion, error) {
	var c Completion
	tok := head.Tokenizer()
	if tok == nil {
		return c, fmt.Errorf("%w: %w", ErrArgument, ErrNoTokenizer)
	}
	ids, err := tok.Encode(prompt, true)
	if err != nil {
		return c, fmt.Errorf("encoding the prompt: %w", err)
	}
	if len(ids) == 0 {
		return c, fmt.Errorf("%w: the prompt is empty and the model's tokenizer puts no BOS before a text: give a prompt", ErrArgument)
	}
	c.PromptIDs = ids
	if ctxLen := head.Info().MaxSeqLen; ctxLen > 0 {
		left := ctxLen - len(ids) + 1
		if left < 1 {
			return c, fmt.Errorf("%w: the prompt has %d tokens, the model's context is %d", ErrArgument, len(ids), ctxLen)
		}
		if maxTokens == 0 || maxTokens > left {
			maxTokens = left
		}
	}
	fw, release, err := run(max(len(ids)+maxTokens-1, len(ids)))
	if err != nil {
		return c, err
	}
	defer release()
	if err := onPiece(PromptText(tok, ids)); err != nil {
		return c, err
	}
	start := time.Now()
	var text strings.Builder
	c.IDs, err = Generate(ctx, head, fw, ids, maxTokens, sampler, func(prev, next int) error {
		if c.TTFT == 0 {
			c.TTFT = time.Since(start)
		}
		piece := tok.Decode(prev, next)
		text.WriteString(piece)
		return onPiece(piece)
	})
	c.Total = time.Since(start)
	c.Text = text.String()
	return c, err
}

// PromptText is the text of a prompt's ids as a generation echoes it: a
// leading BOS (when the tokenizer has one) prints nothing, the rest
// decodes each id after the one before it.
func PromptText(tok tokenizer.Tokenizer, prompt []int) string {
	var b strings.Builder
	prev := -1
	for i, id := range prompt {
		if i > 0 || id != tok.BOS() {
			b.WriteString(tok.Decode(prev, id))
		}
		prev = id
	}
	return b.String()
}
