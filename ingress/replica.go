package ingress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	sse "github.com/tmaxmax/go-sse"

	"github.com/swarmllm/swarm/client"
)

// replicaSession generates by forwarding text to a full-range replica's
// OpenAI-compatible POST /v1/completions with stream: true. It keeps the
// session's whole text so that a later call (PETALS' inference_session
// continued with new inputs) sends prompt = everything so far + the new
// input; engines with prefix caching (vLLM, SGLang, llama.cpp) reuse their
// attention cache for it.
type replicaSession struct {
	c    client.Candidate
	http *http.Client
	// text is the session's text so far: inputs and outputs.
	text string
	// bosText is the model's BOS text, which replicaPrompt drops.
	bosText string
}

func (s *replicaSession) close() error { return nil }

// completionRequest is the request body of POST /v1/completions sent to an
// engine (https://platform.openai.com/docs/api-reference/completions/create);
// top_k and repetition_penalty are the extensions vLLM, SGLang and
// llama.cpp's server accept, sent only when set, as are the OpenAI
// penalties, logit_bias and response_format.
type completionRequest struct {
	Model             string          `json:"model"`
	Prompt            string          `json:"prompt"`
	MaxTokens         int             `json:"max_tokens"`
	Temperature       float64         `json:"temperature"`
	TopP              float64         `json:"top_p,omitempty"`
	TopK              int             `json:"top_k,omitempty"`
	RepetitionPenalty float64         `json:"repetition_penalty,omitempty"`
	PresencePenalty   float64         `json:"presence_penalty,omitempty"`
	FrequencyPenalty  float64         `json:"frequency_penalty,omitempty"`
	LogitBias         map[int]float64 `json:"logit_bias,omitempty"`
	ResponseFormat    any             `json:"response_format,omitempty"`
	Seed              *uint64         `json:"seed,omitempty"`
	Stream            bool            `json:"stream"`
	StreamOptions     map[string]any  `json:"stream_options,omitempty"`
}

// formatted is a sampling constraint (blocks.Constraint) that an engine can
// apply itself, named by an OpenAI response_format sent to replicas.
type formatted interface{ ResponseFormat() any }

// completionChunk is one server-sent event of a streamed completion.
type completionChunk struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (s *replicaSession) run(ctx context.Context, in input, maxTokens int, sp sampling, emit func(string) error) (outcome, error) {
	var out outcome
	prompt := s.text + replicaPrompt(s.bosText, in.text, in.rendered)
	if maxTokens == 0 {
		s.text = prompt
		return out, nil
	}
	req := completionRequest{
		Model: s.c.Info.BackendModel, Prompt: prompt, MaxTokens: maxTokens,
		Temperature: sp.cfg.Temperature, TopP: sp.cfg.TopP, TopK: sp.cfg.TopK,
		PresencePenalty: sp.cfg.PresencePenalty, FrequencyPenalty: sp.cfg.FrequencyPenalty, LogitBias: sp.cfg.LogitBias,
		Stream: true, StreamOptions: map[string]any{"include_usage": true},
	}
	if sp.cfg.RepetitionPenalty != 1 {
		req.RepetitionPenalty = sp.cfg.RepetitionPenalty
	}
	if sp.seeded {
		req.Seed = &sp.cfg.Seed
	}
	if c := sp.cfg.Constraint; c != nil {
		f, ok := c.(formatted)
		if !ok {
			return out, fmt.Errorf("%w: replica %s cannot apply this sampling constraint", ErrBadRequest, s.c.Endpoint.Inference)
		}
		req.ResponseFormat = f.ResponseFormat()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return out, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // on a stop sequence this ends the engine's generation
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.c.Endpoint.Inference+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return out, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(hr)
	if err != nil {
		return out, fmt.Errorf("%w: replica %s: %w", ErrUpstream, s.c.Endpoint.Inference, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return out, fmt.Errorf("%w: replica %s: HTTP %s: %s", ErrUpstream, s.c.Endpoint.Inference, resp.Status, bytes.TrimSpace(msg))
	}
	var generated []byte
	defer func() { s.text = prompt + string(generated) }()
	for ev, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 1 << 20}) {
		if err != nil {
			return out, fmt.Errorf("%w: replica %s: reading the stream: %w", ErrUpstream, s.c.Endpoint.Inference, err)
		}
		if ev.Data == "[DONE]" {
			return out, nil
		}
		var ch completionChunk
		if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
			return out, fmt.Errorf("%w: replica %s: bad event %q: %w", ErrUpstream, s.c.Endpoint.Inference, ev.Data, err)
		}
		if ch.Error != nil {
			return out, fmt.Errorf("%w: replica %s: %s", ErrUpstream, s.c.Endpoint.Inference, ch.Error.Message)
		}
		if ch.Usage != nil {
			out.promptTokens = ch.Usage.PromptTokens
			out.tokens = ch.Usage.CompletionTokens
		}
		for _, c := range ch.Choices {
			if c.Text != "" {
				out.tokens++
				generated = append(generated, c.Text...)
				if err := emit(c.Text); err != nil {
					if errors.Is(err, errStop) {
						return out, nil
					}
					return out, err
				}
			}
			if c.FinishReason != nil && *c.FinishReason == "stop" {
				out.ended = true
			}
		}
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, fmt.Errorf("%w: replica %s: stream ended without [DONE]", ErrUpstream, s.c.Endpoint.Inference)
}
