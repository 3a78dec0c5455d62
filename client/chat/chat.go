// Package chat is an interactive, streaming chat with a model: it keeps
// the conversation, sends all of it with each user message to a Backend and
// streams the reply as it comes. Two backends exist: Remote, a model
// served by a swarm ingress (`swarm proxy`) or any OpenAI-compatible
// endpoint (POST /v1/chat/completions through client.Ingress.Chat, where
// the ingress renders the model's own chat template and generation stops
// at the model's end-of-turn token), and client/local's Chat, the whole
// model in this process, which renders and stops the same way. `swarm
// chat` is a thin command over Session.Run.
//
// This package must never import server/, registry/, blocks/, ingress/ or
// cmd/: it speaks through a Backend, and the OpenAI API through
// client.Ingress only.
package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/swarmllm/swarm/client"
)

// Commands a line of input may be instead of a message.
const (
	// CommandReset forgets the conversation (the system prompt stays).
	CommandReset = "/reset"
	// CommandExit ends Run, as the end of the input (Ctrl-D) does.
	CommandExit = "/exit"
)

// maxLineBytes is the longest input line Run reads (1 MiB).
const maxLineBytes = 1 << 20

// ErrRefused marks a Backend's refusal of one message (such as a
// conversation longer than the model's context): Run reports it and the
// conversation goes on without that message, as it does for an error the
// ingress answers (client.ErrIngress).
var ErrRefused = errors.New("chat: message refused")

// Backend answers a conversation: given the messages (the system prompt
// first when there is one, the user's new message last) and the sampling
// settings, it streams the reply's text in chunks, the last one carrying
// FinishReason and Usage. The iteration ends at the first error.
type Backend interface {
	Chat(ctx context.Context, messages []client.ChatMessage, s client.Sampling) iter.Seq2[client.Chunk, error]
}

// remote is the Backend of a model at an ingress.
type remote struct {
	ing   *client.Ingress
	model string
}

func (r remote) Chat(ctx context.Context, messages []client.ChatMessage, s client.Sampling) iter.Seq2[client.Chunk, error] {
	return r.ing.Chat(ctx, r.model, messages, s)
}

// Remote returns the Backend of model (its id at the ingress) at ing. A
// nil ingress or an empty model gives an error wrapping
// client.ErrBadOption.
func Remote(ing *client.Ingress, model string) (Backend, error) {
	if ing == nil || strings.TrimSpace(model) == "" {
		return nil, fmt.Errorf("%w: chat needs an ingress and a model id", client.ErrBadOption)
	}
	return remote{ing: ing, model: model}, nil
}

// Connect returns the Backend of model at the OpenAI-compatible endpoint
// baseURL ("http://HOST:PORT", with or without "/v1") with opts (such as
// client.WithAPIKey); "" picks the endpoint's first model (FirstModel,
// which asks the endpoint). A malformed URL or option is an error wrapping
// client.ErrBadOption.
func Connect(ctx context.Context, baseURL, model string, opts ...client.IngressOption) (Backend, error) {
	ing, err := client.NewIngress(strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/v1"), opts...)
	if err != nil {
		return nil, err
	}
	if model == "" {
		if model, err = FirstModel(ctx, ing); err != nil {
			return nil, err
		}
	}
	return Remote(ing, model)
}

// Config is what a Session sends with every request.
type Config struct {
	// System is the system prompt, the conversation's first message; ""
	// sends none.
	System string
	// Sampling are the generation settings of each reply (MaxTokens 0: the
	// backend's default, the rest of the context).
	Sampling client.Sampling
}

// Reply is one answer of the model.
type Reply struct {
	// Text is the reply's whole text.
	Text string
	// FinishReason is "stop" (the model ended its turn, or a stop
	// sequence matched) or "length" (Sampling.MaxTokens reached).
	FinishReason string
	// Usage counts the request's tokens, when the backend reports them.
	Usage *client.IngressUsage
}

// Session is one conversation. It is used by one goroutine at a time.
type Session struct {
	b        Backend
	cfg      Config
	messages []client.ChatMessage // the user's and the model's turns, in order, without the system prompt
}

// New starts an empty conversation with b. A nil backend gives an error
// wrapping client.ErrBadOption.
func New(b Backend, cfg Config) (*Session, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: chat needs a backend", client.ErrBadOption)
	}
	return &Session{b: b, cfg: cfg}, nil
}

// FirstModel returns the first model the ingress lists (GET /v1/models),
// the default of `swarm chat`; an ingress that lists none is an error.
func FirstModel(ctx context.Context, ing *client.Ingress) (string, error) {
	models, err := ing.Models(ctx)
	if err != nil {
		return "", fmt.Errorf("chat: listing the models: %w", err)
	}
	if len(models) == 0 {
		return "", errors.New("chat: the ingress serves no model")
	}
	return models[0], nil
}

// Messages returns the conversation as it is sent: the system prompt (if
// any), then the user's and the model's turns.
func (s *Session) Messages() []client.ChatMessage {
	var out []client.ChatMessage
	if s.cfg.System != "" {
		out = append(out, client.ChatMessage{Role: "system", Content: s.cfg.System})
	}
	return append(out, s.messages...)
}

// Reset forgets the turns; the system prompt stays.
func (s *Session) Reset() { s.messages = nil }

// Send adds a user message, streams the model's reply to w piece by piece
// as the backend sends it, and adds the reply to the conversation. On
// error the conversation is as before the call (what was streamed stays
// written) and the error is the backend's (an ingress's
// *client.IngressError, the connection's, ErrRefused) or w's.
func (s *Session) Send(ctx context.Context, text string, w io.Writer) (Reply, error) {
	msgs := append(s.Messages(), client.ChatMessage{Role: "user", Content: text})
	var (
		r Reply
		b strings.Builder
	)
	for chunk, err := range s.b.Chat(ctx, msgs, s.cfg.Sampling) {
		if err != nil {
			return Reply{}, err
		}
		if chunk.Text != "" {
			b.WriteString(chunk.Text)
			if _, err := io.WriteString(w, chunk.Text); err != nil {
				return Reply{}, fmt.Errorf("chat: writing the reply: %w", err)
			}
		}
		if chunk.FinishReason != "" {
			r.FinishReason, r.Usage = chunk.FinishReason, chunk.Usage
		}
	}
	r.Text = b.String()
	s.messages = append(s.messages, client.ChatMessage{Role: "user", Content: text},
		client.ChatMessage{Role: "assistant", Content: r.Text})
	return r, nil
}

// PromptFor returns the prompt Run shows before each line read from in:
// "> " when in is a terminal, "" for a pipe or a file.
func PromptFor(in io.Reader) string {
	if f, ok := in.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		return "> "
	}
	return ""
}

// Run reads one message per line from in and writes each reply to out,
// streamed, then a newline. Empty lines are skipped; CommandReset starts
// a new conversation; CommandExit or the end of in ends Run with nil.
// When prompt is not "", it is written to out before each line is read
// (for a terminal; a pipe wants none). An error the ingress answers or
// the backend's refusal (ErrRefused, such as a conversation longer than
// the model's context) is written to errOut and the conversation goes on
// without that message; any other error ends Run.
func (s *Session) Run(ctx context.Context, in io.Reader, out, errOut io.Writer, prompt string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	for {
		if prompt != "" {
			if _, err := io.WriteString(out, prompt); err != nil {
				return err
			}
		}
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				return fmt.Errorf("chat: reading input: %w", err)
			}
			return nil
		}
		line := strings.TrimRight(sc.Text(), "\r")
		switch strings.TrimSpace(line) {
		case "":
			continue
		case CommandExit:
			return nil
		case CommandReset:
			s.Reset()
			fmt.Fprintln(errOut, "(new conversation)")
			continue
		}
		_, err := s.Send(ctx, line, out)
		if _, werr := io.WriteString(out, "\n"); err == nil && werr != nil {
			return werr
		}
		switch {
		case errors.Is(err, ErrRefused):
			fmt.Fprintln(errOut, err)
		case errors.Is(err, client.ErrIngress):
			fmt.Fprintf(errOut, "chat: %v\n", err)
		case err != nil:
			return err
		}
	}
}
