package local

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/client/chat"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/openai"
)

// Chat is the chat.Backend of a model in this process. For each reply it
// renders the whole conversation as `swarm proxy` does for POST
// /v1/chat/completions: with the model's chat template as transformers'
// apply_chat_template(add_generation_prompt=True) does, encoded without
// added special tokens (ingress.EncodePrompt), or, for a model without a
// template, with the plain fallback (openai.PlainTemplate: the contents
// joined by "\n", encoded as a completion prompt, BOS first). It then
// prefills the prompt in a fresh session and samples until an
// end-of-generation token (blocks.EndOfGeneration: EOS and the end-of-turn
// tokens) or Sampling.MaxTokens. A Chat is used by one goroutine at a
// time.
type Chat struct {
	head    blocks.Head
	run     blocks.Runner
	tpl     *openai.ChatTemplate
	bosText string
	now     func() time.Time // strftime_now's clock
}

var _ chat.Backend = (*Chat)(nil)

// errStopped ends a generation whose consumer stopped iterating.
var errStopped = errors.New("local: the reply's consumer stopped")

// NewChat returns the chat backend of head, whose blocks run is, with
// template (the model's Jinja2 chat template; "" for the plain fallback).
// A head without a tokenizer is an error wrapping client.ErrBadOption and
// blocks.ErrNoTokenizer; a template that does not parse wraps
// openai.ErrTemplate.
func NewChat(head blocks.Head, run blocks.Runner, template string) (*Chat, error) {
	if head == nil || run == nil {
		return nil, fmt.Errorf("%w: a local chat needs a head and a runner", client.ErrBadOption)
	}
	tok := head.Tokenizer()
	if tok == nil {
		return nil, fmt.Errorf("%w: %w: give a tokenizer file", client.ErrBadOption, blocks.ErrNoTokenizer)
	}
	bos, eos := ingress.SpecialTexts(tok)
	tpl := openai.PlainTemplate()
	if template != "" {
		var err error
		if tpl, err = openai.NewChatTemplate(template, bos, eos); err != nil {
			return nil, err
		}
	}
	return &Chat{head: head, run: run, tpl: tpl, bosText: bos, now: time.Now}, nil
}

// Prompt returns the token ids the model is given for messages: the
// rendered conversation with the header of the assistant's turn, encoded
// as `swarm proxy` encodes it. Errors wrap chat.ErrRefused: a template
// that fails on these messages (or calls raise_exception), and an empty
// prompt (the plain fallback of empty messages, for a tokenizer that puts
// no BOS before a text).
func (c *Chat) Prompt(messages []client.ChatMessage) ([]int, error) {
	msgs := make([]openai.Message, len(messages))
	for i, m := range messages {
		msgs[i] = openai.Message{Role: m.Role, Content: m.Content}
	}
	text, err := c.tpl.Apply(openai.Conversation{Messages: msgs, AddGenerationPrompt: true, Now: c.now()})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", chat.ErrRefused, err)
	}
	ids, err := ingress.EncodePrompt(c.head.Tokenizer(), c.bosText, text, !c.tpl.Plain(), true)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding the conversation: %w", chat.ErrRefused, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: the conversation encodes to no token and the tokenizer puts no BOS before a text: write something", chat.ErrRefused)
	}
	return ids, nil
}

// Chat streams the reply to messages (chat.Backend). s.MaxTokens 0 fills
// the model's context; s.Seed nil samples with a random seed; stop
// sequences are not implemented (an error wrapping client.ErrBadOption).
// A conversation that leaves no room in the context is refused
// (chat.ErrRefused). The last chunk has FinishReason "stop" (an
// end-of-generation token was sampled) or "length", and Usage.
func (c *Chat) Chat(ctx context.Context, messages []client.ChatMessage, s client.Sampling) iter.Seq2[client.Chunk, error] {
	return func(yield func(client.Chunk, error) bool) {
		usage, err := c.reply(ctx, messages, s, func(piece string) bool { return yield(client.Chunk{Text: piece}, nil) })
		switch {
		case errors.Is(err, errStopped):
		case err != nil:
			yield(client.Chunk{}, err)
		default:
			finish := "stop"
			if usage.CompletionTokens == usage.maxTokens {
				finish = "length"
			}
			yield(client.Chunk{FinishReason: finish, Usage: &usage.IngressUsage}, nil)
		}
	}
}

// replyUsage is a reply's token counts and the most tokens it could have.
type replyUsage struct {
	client.IngressUsage
	maxTokens int
}

// reply generates the reply to messages, calling emit with each token's
// text; emit returning false stops it with errStopped.
func (c *Chat) reply(ctx context.Context, messages []client.ChatMessage, s client.Sampling, emit func(string) bool) (replyUsage, error) {
	var u replyUsage
	if len(s.Stop) > 0 {
		return u, fmt.Errorf("%w: stop sequences are not implemented by a local chat", client.ErrBadOption)
	}
	if s.MaxTokens < 0 {
		return u, fmt.Errorf("%w: max tokens %d, want >= 0", client.ErrBadOption, s.MaxTokens)
	}
	cfg := blocks.SamplerConfig{Temperature: s.Temperature, TopP: s.TopP, RepetitionPenalty: 1, Seed: rand.Uint64()}
	if s.Seed != nil {
		cfg.Seed = uint64(*s.Seed)
	}
	sampler, err := blocks.NewSampler(cfg)
	if err != nil {
		return u, fmt.Errorf("%w: %w", client.ErrBadOption, err)
	}
	ids, err := c.Prompt(messages)
	if err != nil {
		return u, err
	}
	u.maxTokens = s.MaxTokens
	switch ctxLen := c.head.Info().MaxSeqLen; {
	case ctxLen > 0 && len(ids) > ctxLen:
		return u, fmt.Errorf("%w: the conversation has %d tokens, more than the model's context of %d: /reset to start a new one",
			chat.ErrRefused, len(ids), ctxLen)
	case ctxLen > 0:
		if left := ctxLen - len(ids) + 1; u.maxTokens == 0 || u.maxTokens > left {
			u.maxTokens = left // the last token sampled is never fed
		}
	case u.maxTokens == 0:
		return u, fmt.Errorf("%w: the model's context length is unknown: give the most tokens per reply", client.ErrBadOption)
	}
	fw, release, err := c.run(len(ids) + u.maxTokens - 1)
	if err != nil {
		return u, err
	}
	defer release()
	tok := c.head.Tokenizer()
	out, err := blocks.Generate(ctx, c.head, fw, ids, u.maxTokens, sampler, func(prev, next int) error {
		if !emit(tok.Decode(prev, next)) {
			return errStopped
		}
		return nil
	})
	u.PromptTokens, u.CompletionTokens, u.TotalTokens = len(ids), len(out), len(ids)+len(out)
	return u, err
}
