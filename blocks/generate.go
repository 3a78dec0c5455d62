package blocks

import (
	"context"
	"fmt"
	"slices"

	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// Forwarder runs hidden states [nTokens, DModel] at positions
// pos..pos+nTokens-1 through ALL blocks of a model, in order, and returns the
// output hidden states [nTokens, DModel]. A Session over [0, NBlocks) is one
// (local generation); a client's chain of servers is another. ctx bounds
// the call: a chain gives up on its network round trips when ctx ends, a
// local session checks ctx between blocks.
type Forwarder interface {
	Forward(ctx context.Context, pos int, hidden []float32, nTokens int) ([]float32, error)
}

// EndOfGeneration returns the ids that end a generation with head,
// ascending: its tokenizer's (tokenizer.EndOfGeneration: EOS, end-of-turn
// tokens such as <|eot_id|>, <|im_end|> and <end_of_turn>, and BOS for
// llama2.c-style tokenizers), or, for a head without a tokenizer, the BOS
// and EOS of its ModelInfo.
func EndOfGeneration(head Head) []int {
	if tok := head.Tokenizer(); tok != nil {
		return tokenizer.EndOfGeneration(tok)
	}
	info := head.Info()
	ids := []int{}
	for _, id := range []int{info.BOS, info.EOS} {
		if id >= 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Generate runs autoregressive generation with llama2.c's run.c semantics:
// prompt (token ids as tokenizer Encode(text, true) returns them: BOS first
// for models that have one, none for Qwen; at least one id) is prefilled in
// one Forward call, then up to maxTokens tokens are sampled one at a time,
// each fed back at the next position. Generation stops early when an id of
// EndOfGeneration(head) is sampled (that token is neither emitted nor
// returned) or when ctx is done. emit is called with each
// generated token and the token before it (for tokenizer Decode) as soon as
// it is sampled; an error from emit stops generation and is returned.
//
// fw must accept len(prompt)+maxTokens-1 positions. Generate returns the
// generated ids; on error, those generated so far.
func Generate(ctx context.Context, head Head, fw Forwarder, prompt []int, maxTokens int, sampler *Sampler, emit func(prev, token int) error) ([]int, error) {
	if len(prompt) == 0 {
		return nil, fmt.Errorf("%w: empty prompt (want at least one token id, such as BOS)", ErrArgument)
	}
	if maxTokens < 0 {
		return nil, fmt.Errorf("%w: max tokens %d, want >= 0", ErrArgument, maxTokens)
	}
	info := head.Info()
	d := info.DModel
	stop := EndOfGeneration(head)
	history := append([]int(nil), prompt...)
	var generated []int
	input, pos := prompt, 0
	for len(generated) < maxTokens {
		if err := ctx.Err(); err != nil {
			return generated, err
		}
		x, err := head.Embed(input)
		if err != nil {
			return generated, err
		}
		y, err := fw.Forward(ctx, pos, x, len(input))
		if err != nil {
			return generated, fmt.Errorf("blocks: generate at position %d: %w", pos, err)
		}
		logits, err := head.Logits(y[(len(input)-1)*d:])
		if err != nil {
			return generated, err
		}
		next, err := sampler.Sample(logits, history)
		if err != nil {
			return generated, err
		}
		if _, found := slices.BinarySearch(stop, next); found {
			break
		}
		if err := emit(history[len(history)-1], next); err != nil {
			return generated, err
		}
		generated = append(generated, next)
		history = append(history, next)
		pos += len(input)
		input = []int{next}
	}
	return generated, nil
}
