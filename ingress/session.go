package ingress

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
)

// errStop ends a session's generation when the consumer has what it needs
// (a stop sequence matched, or the caller went away).
var errStop = errors.New("ingress: generation stopped")

// input is what a session continues with: text, or (chain sessions only)
// exact token ids.
type input struct {
	// text is appended to the session's context; a chain session encodes it
	// with EncodePrompt (BOS first on its first call unless rendered).
	text string
	// ids, when non-nil, are fed instead of encoding text (a chain session
	// resuming another chain's generation with the exact tokens).
	ids []int
	// rendered marks text rendered by a chat template, special tokens
	// written as text: encoded without added special tokens (EncodePrompt).
	rendered bool
}

// outcome is what one generation call produced.
type outcome struct {
	// promptTokens is the number of tokens the input added (for usage).
	promptTokens int
	// tokens is the number of tokens generated.
	tokens int
	// ids are the generated token ids (chain sessions; nil for replicas).
	ids []int
	// ended is true when the model itself ended the text (an
	// end-of-generation id such as EOS or <|eot_id|>, or the
	// engine's finish_reason "stop").
	ended bool
}

// session is one open generation context on a route: a chain of block
// servers (token level, attention caches at each hop) or a replica (text
// level). It is used by one goroutine at a time.
type session interface {
	// run continues the context with in, then generates up to maxTokens
	// tokens, calling emit with each token's text as soon as it is sampled;
	// emit returning errStop ends the generation without error.
	run(ctx context.Context, in input, maxTokens int, sp sampling, emit func(string) error) (outcome, error)
	// close releases the session at the servers.
	close() error
}

// sampling is how one call draws tokens: chains use the sampler, replicas
// get the configuration as OpenAI request fields.
type sampling struct {
	cfg blocks.SamplerConfig
	// seeded is true when the request gave a seed (replicas get it then).
	seeded  bool
	sampler *blocks.Sampler
}

// chainSession generates over a client.Session: it embeds, sends the hidden
// states through the chain, applies the LM head and samples, with llama2.c's
// run.c semantics (blocks.Generate), keeping positions across calls so a
// session can be continued (PETALS' inference_session).
type chainSession struct {
	head      blocks.Head
	sess      *client.Session
	maxLength int
	// pos is the number of positions fed through the chain.
	pos int
	// pending are tokens sampled (or given) but not yet fed.
	pending []int
	// history is every id fed or pending, for the repetition penalty.
	history []int
	started bool
	// stop are the ids that end the text (blocks.EndOfGeneration: EOS and
	// the model's end-of-turn tokens), ascending.
	stop []int
	// bosText is the model's BOS text, for EncodePrompt.
	bosText string
}

func (s *chainSession) close() error { return s.sess.Close() }

func (s *chainSession) run(ctx context.Context, in input, maxTokens int, sp sampling, emit func(string) error) (outcome, error) {
	tok := s.head.Tokenizer()
	info := s.head.Info()
	ids := in.ids
	if ids == nil {
		var err error
		if ids, err = EncodePrompt(tok, s.bosText, in.text, in.rendered, !s.started); err != nil {
			return outcome{}, fmt.Errorf("%w: encoding the prompt: %w", ErrBadRequest, err)
		}
	}
	s.started = true
	out := outcome{promptTokens: len(ids)}
	s.history = append(s.history, ids...)
	feed := append(s.pending, ids...)
	s.pending = feed
	if len(feed) == 0 {
		return out, fmt.Errorf("%w: empty input and nothing generated before to continue from", ErrBadRequest)
	}
	for out.tokens < maxTokens {
		if s.pos+len(feed) > s.maxLength {
			return out, fmt.Errorf("%w: %d positions used + %d to feed > max_length %d", ErrMaxLength, s.pos, len(feed), s.maxLength)
		}
		x, err := s.head.Embed(feed)
		if err != nil {
			return out, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		y, err := s.sess.Forward(ctx, s.pos, x, len(feed))
		if err != nil {
			return out, err
		}
		logits, err := s.head.Logits(y[(len(feed)-1)*info.DModel:])
		if err != nil {
			return out, err
		}
		next, err := sp.sampler.Sample(logits, s.history)
		if err != nil {
			return out, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		s.pos += len(feed)
		prev := s.history[len(s.history)-1]
		s.history = append(s.history, next)
		feed = []int{next}
		s.pending = feed
		if _, found := slices.BinarySearch(s.stop, next); found {
			out.ended = true
			return out, nil
		}
		out.tokens++
		out.ids = append(out.ids, next)
		if err := emit(tok.Decode(prev, next)); err != nil {
			if errors.Is(err, errStop) {
				return out, nil
			}
			return out, err
		}
	}
	return out, nil
}
