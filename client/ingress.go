package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"

	sse "github.com/tmaxmax/go-sse"
)

// ErrIngress: an ingress answered an error; the concrete error is an
// *IngressError with the HTTP status and OpenAI's error fields.
var ErrIngress = errors.New("client: ingress error")

// Ingress is a client of a swarm ingress (`swarm proxy`): the high-level
// API for applications, which never see blocks or hidden states. It speaks
// the ingress's OpenAI-compatible API with server-sent-event streaming
// (POST /v1/completions and /v1/chat/completions with "stream": true,
// https://platform.openai.com/docs/api-reference). It is safe for
// concurrent use.
type Ingress struct {
	base      string
	http      *http.Client
	apiKey    string
	providers []string
}

// IngressOption configures NewIngress.
type IngressOption func(*Ingress) error

// WithAPIKey sends "Authorization: Bearer KEY" (for `swarm proxy
// --api-keys`).
func WithAPIKey(key string) IngressOption {
	return func(c *Ingress) error {
		if strings.TrimSpace(key) == "" {
			return fmt.Errorf("%w: empty API key", ErrBadOption)
		}
		c.apiKey = key
		return nil
	}
}

// WithTrustedProviders restricts every request to servers run by these
// providers (the X-Swarm-Providers header; OpenTela's trusted-provider
// allowlist, paper 000 Sec. 3.3).
func WithTrustedProviders(names ...string) IngressOption {
	return func(c *Ingress) error {
		if len(names) == 0 {
			return fmt.Errorf("%w: no trusted provider named", ErrBadOption)
		}
		c.providers = append([]string(nil), names...)
		return nil
	}
}

// WithIngressHTTPClient sets the HTTP client (default: a new http.Client
// without timeout; streams end with the context).
func WithIngressHTTPClient(h *http.Client) IngressOption {
	return func(c *Ingress) error {
		if h == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrBadOption)
		}
		c.http = h
		return nil
	}
}

// NewIngress returns a client of the ingress at baseURL
// ("http://HOST:PORT", as `swarm proxy` prints it). Errors wrap
// ErrBadOption.
func NewIngress(baseURL string, opts ...IngressOption) (*Ingress, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: ingress URL %q: want http://HOST:PORT", ErrBadOption, baseURL)
	}
	c := &Ingress{base: strings.TrimSuffix(baseURL, "/"), http: &http.Client{}}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Sampling are a request's generation settings.
type Sampling struct {
	// MaxTokens is the most tokens to generate; 0 leaves the ingress's
	// default (16 for Generate, the rest of the context for Chat).
	MaxTokens int
	// Temperature 0 is greedy decoding; it is always sent.
	Temperature float64
	// TopP keeps the smallest set of likely tokens whose probability sums
	// past P; 0 leaves the default (1, all tokens).
	TopP float64
	// Seed makes sampling reproducible; nil lets the ingress choose.
	Seed *int64
	// Stop are up to 4 stop sequences: the text ends before the first.
	Stop []string
}

// Chunk is one piece of a streamed generation.
type Chunk struct {
	// Text is the next piece of generated text (empty in the last chunk).
	Text string
	// FinishReason is set in the last chunk: "stop" (the model ended the
	// text or a stop sequence matched) or "length" (MaxTokens reached).
	FinishReason string
	// Usage is set in the last chunk.
	Usage *IngressUsage
}

// IngressUsage counts a request's tokens as OpenAI's "usage" does.
type IngressUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ChatMessage is one message of a conversation.
type ChatMessage struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the message's text.
	Content string `json:"content"`
}

// IngressError is an error answered by the ingress (OpenAI's error JSON).
type IngressError struct {
	// Status is the HTTP status (400, 401, 404, 502, 503, ...), or 200 for
	// an error event inside a started stream.
	Status int
	// Type, Code and Param are OpenAI's error fields ("invalid_request_error",
	// "model_not_found", "model").
	Type, Code, Param string
	// Message says what went wrong.
	Message string
}

func (e *IngressError) Error() string {
	return fmt.Sprintf("%v: HTTP %d %s (%s): %s", ErrIngress, e.Status, e.Code, e.Type, e.Message)
}

// Unwrap makes errors.Is(err, ErrIngress) true.
func (e *IngressError) Unwrap() error { return ErrIngress }

// Generate streams a text completion of prompt (POST /v1/completions;
// "" starts from BOS alone). The sequence yields each piece of text as
// the ingress sends it, then one last Chunk with FinishReason and Usage; on
// failure it yields one (Chunk{}, err), err an *IngressError when the
// ingress answered one. Stopping the iteration early cancels the request.
func (c *Ingress) Generate(ctx context.Context, model, prompt string, s Sampling) iter.Seq2[Chunk, error] {
	body := c.request(model, s)
	body["prompt"] = prompt
	return c.stream(ctx, "/v1/completions", body, false)
}

// Chat streams a chat completion of the conversation (POST
// /v1/chat/completions): the ingress renders it with the model's chat
// template, or its plain fallback. The sequence is as Generate's.
func (c *Ingress) Chat(ctx context.Context, model string, messages []ChatMessage, s Sampling) iter.Seq2[Chunk, error] {
	body := c.request(model, s)
	body["messages"] = messages
	return c.stream(ctx, "/v1/chat/completions", body, true)
}

// request builds the shared request fields.
func (c *Ingress) request(model string, s Sampling) map[string]any {
	body := map[string]any{"model": model, "temperature": s.Temperature, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
	if s.MaxTokens > 0 {
		body["max_tokens"] = s.MaxTokens
	}
	if s.TopP > 0 {
		body["top_p"] = s.TopP
	}
	if s.Seed != nil {
		body["seed"] = *s.Seed
	}
	if len(s.Stop) > 0 {
		body["stop"] = s.Stop
	}
	return body
}

// streamEvent is what the two streams' chunks hold.
type streamEvent struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *IngressUsage `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// apiError turns an error object into an *IngressError.
func (ev streamEvent) apiError(status int) *IngressError {
	e := &IngressError{Status: status, Message: ev.Error.Message, Type: ev.Error.Type}
	if ev.Error.Code != nil {
		e.Code = *ev.Error.Code
	}
	if ev.Error.Param != nil {
		e.Param = *ev.Error.Param
	}
	return e
}

// stream posts body and yields the chunks of the server-sent-event
// response (https://html.spec.whatwg.org/multipage/server-sent-events.html,
// read with github.com/tmaxmax/go-sse).
func (c *Ingress) stream(ctx context.Context, path string, body map[string]any, chat bool) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		b, err := json.Marshal(body)
		if err != nil {
			yield(Chunk{}, fmt.Errorf("%w: %w", ErrArgument, err))
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
		if err != nil {
			yield(Chunk{}, err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		if c.apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+c.apiKey)
		}
		if c.providers != nil {
			req.Header.Set("X-Swarm-Providers", strings.Join(c.providers, ","))
		}
		resp, err := c.http.Do(req)
		if err != nil {
			yield(Chunk{}, fmt.Errorf("client: POST %s%s: %w", c.base, path, err))
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			var ev streamEvent
			if json.Unmarshal(raw, &ev) == nil && ev.Error != nil {
				yield(Chunk{}, ev.apiError(resp.StatusCode))
			} else {
				yield(Chunk{}, &IngressError{Status: resp.StatusCode, Message: strings.TrimSpace(string(raw))})
			}
			return
		}
		last := Chunk{}
		for e, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 1 << 20}) {
			if err != nil {
				yield(Chunk{}, fmt.Errorf("client: reading the stream of %s: %w", path, err))
				return
			}
			if e.Data == "[DONE]" {
				yield(last, nil)
				return
			}
			var ev streamEvent
			if err := json.Unmarshal([]byte(e.Data), &ev); err != nil {
				yield(Chunk{}, fmt.Errorf("%w: bad stream event %q: %w", ErrProtocol, e.Data, err))
				return
			}
			if ev.Error != nil {
				yield(Chunk{}, ev.apiError(resp.StatusCode))
				return
			}
			if ev.Usage != nil {
				last.Usage = ev.Usage
			}
			for _, ch := range ev.Choices {
				text := ch.Text
				if chat {
					text = ch.Delta.Content
				}
				if text != "" && !yield(Chunk{Text: text}, nil) {
					return
				}
				if ch.FinishReason != nil {
					last.FinishReason = *ch.FinishReason
				}
			}
		}
		yield(Chunk{}, fmt.Errorf("%w: the stream of %s ended without [DONE]", ErrProtocol, path))
	}
}

// Models lists the ids of the models the ingress serves (GET /v1/models),
// in its order. Errors are an *IngressError when the ingress answered one.
func (c *Ingress) Models(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: GET %s/v1/models: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("client: GET %s/v1/models: %w", c.base, err)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	var ev streamEvent
	switch {
	case resp.StatusCode != http.StatusOK && json.Unmarshal(raw, &ev) == nil && ev.Error != nil:
		return nil, ev.apiError(resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, &IngressError{Status: resp.StatusCode, Message: strings.TrimSpace(string(raw))}
	case json.Unmarshal(raw, &list) != nil:
		return nil, fmt.Errorf("%w: GET /v1/models: not a model list: %q", ErrProtocol, raw)
	}
	ids := make([]string, len(list.Data))
	for i, m := range list.Data {
		ids[i] = m.ID
	}
	return ids, nil
}
