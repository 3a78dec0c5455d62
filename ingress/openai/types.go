package openai

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The request and response bodies of the OpenAI API as this front end
// reads and writes them (https://platform.openai.com/docs/api-reference/
// completions and .../chat). Requests use pointers where "absent" differs
// from zero (temperature 0 is greedy, absent is the default 1).
// compat_test.go checks them against github.com/sashabaranov/go-openai's
// types; the npm `openai` package test checks them end to end.

// StreamOptions is "stream_options".
type StreamOptions struct {
	// IncludeUsage asks for a last chunk with the usage and no choices.
	IncludeUsage bool `json:"include_usage"`
}

// common are the fields completions and chat completions share.
type common struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	N             *int            `json:"n"`
	Stream        bool            `json:"stream"`
	StreamOptions *StreamOptions  `json:"stream_options"`
	Stop          json.RawMessage `json:"stop"`
	Seed          *int64          `json:"seed"`
	User          string          `json:"user"`
	Logprobs      json.RawMessage `json:"logprobs"`
	// PresencePenalty and FrequencyPenalty are in [-2, 2]; LogitBias maps
	// token ids (as strings) to a bias in [-100, 100].
	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	// ResponseFormat is {"type": "text"} or {"type": "json_object"}
	// (constrained decoding, jsonmode.go); json_schema is refused.
	ResponseFormat json.RawMessage `json:"response_format"`
	// Extensions accepted by vLLM, SGLang and llama.cpp's server too.
	TopK              *int     `json:"top_k"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	// SwarmProviders is the trusted-provider allowlist (the request-field
	// form of the X-Swarm-Providers header).
	SwarmProviders []string `json:"swarm_providers"`
}

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	common
	// Prompt is a string or an array holding one string.
	Prompt json.RawMessage `json:"prompt"`
	Echo   bool            `json:"echo"`
	BestOf *int            `json:"best_of"`
	Suffix *string         `json:"suffix"`
}

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	common
	Messages            []ChatMessageIn `json:"messages"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	// Fields of features this API does not implement: a request that sets
	// one is refused (400 naming it), never silently served without it.
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	Functions         json.RawMessage `json:"functions"`
	FunctionCall      json.RawMessage `json:"function_call"`
	TopLogprobs       json.RawMessage `json:"top_logprobs"`
	Modalities        json.RawMessage `json:"modalities"`
	Audio             json.RawMessage `json:"audio"`
	Prediction        json.RawMessage `json:"prediction"`
	WebSearchOptions  json.RawMessage `json:"web_search_options"`
	ReasoningEffort   json.RawMessage `json:"reasoning_effort"`
}

// ChatMessageIn is a request message; Content is a string or an array of
// content parts of which only {"type": "text", "text": ...} is supported.
type ChatMessageIn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name,omitempty"`
	// extra are the other fields the message sets (tool_calls,
	// tool_call_id, audio...), sorted: the handler refuses them.
	extra []string
}

// UnmarshalJSON reads the message and notes its other fields set (not
// null, not []) in extra.
func (m *ChatMessageIn) UnmarshalJSON(b []byte) error {
	type plain ChatMessageIn
	if err := json.Unmarshal(b, (*plain)(m)); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.extra = nil
	for k, v := range raw {
		switch k {
		case "role", "content", "name":
		default:
			if s := strings.TrimSpace(string(v)); set(v) && s != "[]" {
				m.extra = append(m.extra, k)
			}
		}
	}
	sort.Strings(m.extra)
	return nil
}

// text returns the message's content as text.
func (m ChatMessageIn) text(i int) (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("messages[%d].content: want a string or an array of text parts", i)
	}
	out := ""
	for j, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("messages[%d].content[%d]: type %q is not supported (only \"text\")", i, j, p.Type)
		}
		out += p.Text
	}
	return out, nil
}

// Usage is "usage".
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Completion is the response of POST /v1/completions, and (object
// "text_completion" too) each chunk of its stream.
type Completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	// SystemFingerprint identifies the configuration that generated
	// (fingerprint: the model's shapes, tokenizer and chat template).
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []CompletionChoice `json:"choices"`
	// Usage is an object in a response and in the last chunk of a stream
	// with include_usage; null in its other chunks; absent otherwise.
	Usage any `json:"usage,omitempty"`
}

// CompletionChoice is one choice; FinishReason is null in stream chunks
// before the last.
type CompletionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

// ChatCompletion is the response of POST /v1/chat/completions (object
// "chat.completion").
type ChatCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	// SystemFingerprint identifies the configuration that generated
	// (fingerprint: the model's shapes, tokenizer and chat template).
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []ChatChoice `json:"choices"`
	Usage             Usage        `json:"usage"`
}

// ChatChoice is one choice of a chat completion.
type ChatChoice struct {
	Index        int         `json:"index"`
	Message      ChatMessage `json:"message"`
	Logprobs     any         `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

// ChatMessage is a response message.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatChunk is one chunk of a streamed chat completion (object
// "chat.completion.chunk").
type ChatChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	// SystemFingerprint identifies the configuration that generated
	// (fingerprint: the model's shapes, tokenizer and chat template).
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []ChatChunkChoice `json:"choices"`
	Usage             any               `json:"usage,omitempty"`
}

// ChatChunkChoice is one choice of a chunk.
type ChatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        ChatDelta `json:"delta"`
	Logprobs     any       `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// ChatDelta is what a chunk adds: the role in the first chunk, content
// after.
type ChatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// ModelList is the response of GET /v1/models.
type ModelList struct {
	Object string        `json:"object"`
	Data   []ModelObject `json:"data"`
}

// ModelObject is one model.
type ModelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ErrorBody is OpenAI's error JSON: {"error": {...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error object.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
