package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/swarmllm/swarm/blocks"
)

// Token is one generated token as Generate streams it.
type Token struct {
	// ID is the token id.
	ID int
	// Text is its piece of text, decoded after the previous token
	// (tokenizer.Decode(prev, id)); empty when the head has no tokenizer.
	Text string
	// Index is its 0-based index among the generated tokens.
	Index int
	// Position is its position in the sequence (prompt length + Index).
	Position int
	// Elapsed is the time from the start of generation to this token (the
	// TTFT for the first).
	Elapsed time.Duration
	// Latency is the time since the previous token (or the start).
	Latency time.Duration
}

// errStop ends blocks.Generate when the consumer stops iterating.
var errStop = errors.New("client: iteration stopped")

// Generate streams up to maxTokens tokens generated after prompt (token
// ids as tokenizer Encode(text, true) returns them: BOS first for models
// that have one) through the session's chain, with llama2.c's run.c
// semantics (blocks.Generate): the prompt is prefilled in one step, then
// each sampled token is fed back at the next position; an id of
// blocks.EndOfGeneration (EOS, an end-of-turn token such as <|eot_id|>)
// ends the generation. The session must hold
// len(prompt)+maxTokens-1 positions.
//
// The sequence yields each token as soon as it is sampled; on failure it
// yields one final (Token{}, err). Stopping the iteration early stops the
// generation. Stats reports TTFT and TPOT afterwards.
func (s *Session) Generate(ctx context.Context, prompt []int, maxTokens int, sampler *blocks.Sampler) iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		if need := len(prompt) + maxTokens - 1; need > s.maxLength {
			yield(Token{}, fmt.Errorf("%w: %d prompt tokens + %d new need %d positions, the session holds %d",
				ErrArgument, len(prompt), maxTokens, need, s.maxLength))
			return
		}
		head := s.c.head
		tok := head.Tokenizer()
		start := time.Now()
		last := start
		index := 0
		_, err := blocks.Generate(ctx, head, s, prompt, maxTokens, sampler, func(prev, next int) error {
			now := time.Now()
			t := Token{ID: next, Index: index, Position: len(prompt) + index, Elapsed: now.Sub(start), Latency: now.Sub(last)}
			if tok != nil {
				t.Text = tok.Decode(prev, next)
			}
			last = now
			index++
			s.mu.Lock()
			if s.gen.tokens == 0 {
				s.gen.first = t.Elapsed
			}
			s.gen.tokens++
			s.gen.last = t.Elapsed
			s.mu.Unlock()
			if !yield(t, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(Token{}, err)
		}
	}
}
