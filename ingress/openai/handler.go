package openai

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
)

// ProvidersHeader is the request header carrying the trusted-provider
// allowlist, comma-separated.
const ProvidersHeader = "X-Swarm-Providers"

// RouteHeader names the route that served a request: a header of
// non-streamed responses, a trailer of streamed ones.
const RouteHeader = "X-Swarm-Route"

// DefaultCompletionMaxTokens is max_tokens of POST /v1/completions when the
// request omits it (OpenAI's documented default, 16). Chat completions
// default to the rest of the model's context.
const DefaultCompletionMaxTokens = 16

// Handler serves the OpenAI-compatible API over a Gateway.
type Handler struct {
	gw        *ingress.Gateway
	maxBody   int64 // Gateway.MaxRequestBytes
	templates map[string]*ChatTemplate
	// fps are the models' system fingerprints (fingerprint).
	fps map[string]string
	now func() time.Time
	mux *http.ServeMux
}

// New returns the handler of GET /v1/models[/{model}], POST /v1/completions and POST
// /v1/chat/completions for the gateway's models, compiling each model's
// chat template (the plain fallback when it has none). Errors wrap
// ErrTemplate naming the model.
func New(gw *ingress.Gateway) (*Handler, error) {
	h := &Handler{gw: gw, maxBody: gw.MaxRequestBytes(), templates: map[string]*ChatTemplate{}, fps: map[string]string{}, now: time.Now, mux: http.NewServeMux()}
	for _, m := range gw.Models() {
		h.fps[m.Name] = fingerprint(m)
		if m.ChatTemplate == "" {
			h.templates[m.Name] = PlainTemplate()
			continue
		}
		t, err := NewChatTemplate(m.ChatTemplate, m.BOSText, m.EOSText)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", m.Name, err)
		}
		h.templates[m.Name] = t
	}
	for _, e := range endpoints {
		h.mux.HandleFunc(e.method+" "+e.path, e.serve(h))
		h.mux.HandleFunc(e.path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", e.method)
			h.writeError(w, fmt.Errorf("%w: %s %s (this endpoint serves %s)", ErrMethodNotAllowed, r.Method, r.URL.Path, e.method))
		})
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, fmt.Errorf("%w: %s %s is not an endpoint of this API (%s)", ErrNotFound, r.Method, r.URL.Path, endpointList()))
	})
	return h, nil
}

// endpoints are the routes of the API; each path answers other methods
// with 405 and an Allow header, and any other path is a 404.
var endpoints = []struct {
	method, path string
	serve        func(*Handler) http.HandlerFunc
}{
	{"GET", "/v1/models", func(h *Handler) http.HandlerFunc { return h.models }},
	{"GET", "/v1/models/{id...}", func(h *Handler) http.HandlerFunc { return h.model }},
	{"POST", "/v1/completions", func(h *Handler) http.HandlerFunc { return h.completions }},
	{"POST", "/v1/chat/completions", func(h *Handler) http.HandlerFunc { return h.chat }},
}

// endpointList names the endpoints for a 404's message.
func endpointList() string {
	var names []string
	for _, e := range endpoints {
		names = append(names, e.method+" "+strings.Replace(e.path, "{id...}", "{model}", 1))
	}
	return strings.Join(names, ", ")
}

// Template returns the chat template of a model (nil if not served).
func (h *Handler) Template(model string) *ChatTemplate { return h.templates[model] }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) models(w http.ResponseWriter, r *http.Request) {
	if _, err := h.gw.Authenticate(r); err != nil {
		h.writeError(w, err)
		return
	}
	list := ModelList{Object: "list", Data: []ModelObject{}}
	for _, m := range h.gw.Models() {
		list.Data = append(list.Data, modelObject(m))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// model answers GET /v1/models/{id}: one model object, or 404
// model_not_found.
func (h *Handler) model(w http.ResponseWriter, r *http.Request) {
	if _, err := h.gw.Authenticate(r); err != nil {
		h.writeError(w, err)
		return
	}
	m, err := h.gw.Model(r.PathValue("id"))
	if err != nil {
		h.writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(modelObject(m))
}

// fingerprint is a model's system_fingerprint: "fp_" and 12 hex digits of
// the SHA-256 of what decides its outputs besides the request and the block
// weights: its shapes and vocabulary (blocks.Info), its tokenizer's
// pieces and its chat template. Two proxies of one model give the same.
func fingerprint(m ingress.Model) string {
	h := sha256.New()
	info, _ := json.Marshal(m.Head.Info())
	h.Write(info)
	if tok := m.Head.Tokenizer(); tok != nil {
		for id := range tok.VocabSize() {
			fmt.Fprintf(h, "%d:%q\n", id, tok.Decode(-1, id))
		}
	}
	h.Write([]byte(m.ChatTemplate))
	return "fp_" + hex.EncodeToString(h.Sum(nil))[:12]
}

func modelObject(m ingress.Model) ModelObject {
	return ModelObject{ID: m.Name, Object: "model", Created: m.Created, OwnedBy: "swarm"}
}

// decode reads a JSON request body of at most h.maxBody bytes into v.
func (h *Handler) decode(r *http.Request, w http.ResponseWriter, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return fmt.Errorf("%w: the body is larger than %d bytes, more than the models' contexts can use", ErrBadRequest, h.maxBody)
		}
		return fmt.Errorf("%w: reading the body: %w", ErrBadRequest, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: the body is not the expected JSON: %w", ErrBadRequest, err)
	}
	return unknownFields(body, v)
}

// settings turns the shared fields into a gateway request (all but the
// prompt and max tokens).
func (h *Handler) settings(r *http.Request, c common, api, account string) (ingress.Request, error) {
	req := ingress.Request{Model: c.Model, API: api, Account: account}
	if c.Model == "" {
		return req, badParam("model", "model is required")
	}
	if c.N != nil && *c.N != 1 {
		return req, badParam("n", fmt.Sprintf("n = %d is not supported: this API generates one choice (n = 1)", *c.N))
	}
	if l := strings.TrimSpace(string(c.Logprobs)); set(c.Logprobs) && l != "false" {
		return req, unsupported("logprobs", "log probabilities are not returned")
	}
	temp := 1.0
	if c.Temperature != nil {
		temp = *c.Temperature
	}
	if temp < 0 || temp > 2 || math.IsNaN(temp) {
		return req, badParam("temperature", fmt.Sprintf("temperature %g, want 0 to 2", temp))
	}
	topP := 1.0
	if c.TopP != nil {
		topP = *c.TopP
	}
	if topP < 0 || topP > 1 || math.IsNaN(topP) {
		return req, badParam("top_p", fmt.Sprintf("top_p %g, want 0 to 1", topP))
	}
	req.Sampler = blocks.SamplerConfig{Temperature: temp, TopP: topP, RepetitionPenalty: 1}
	if c.TopK != nil {
		if *c.TopK < 0 {
			return req, badParam("top_k", fmt.Sprintf("top_k %d, want >= 0 (0 = off)", *c.TopK))
		}
		req.Sampler.TopK = *c.TopK
	}
	if c.RepetitionPenalty != nil {
		if *c.RepetitionPenalty <= 0 {
			return req, badParam("repetition_penalty", fmt.Sprintf("repetition_penalty %g, want > 0 (1 = off)", *c.RepetitionPenalty))
		}
		req.Sampler.RepetitionPenalty = *c.RepetitionPenalty
	}
	if err := h.penalties(c, &req.Sampler); err != nil {
		return req, err
	}
	if set(c.ResponseFormat) {
		m, err := h.gw.Model(c.Model)
		if err != nil {
			return req, err
		}
		if req.Sampler.Constraint, err = responseFormat(c.ResponseFormat, m.Head.Tokenizer()); err != nil {
			return req, err
		}
	}
	if c.Seed != nil {
		req.Sampler.Seed, req.Seeded = uint64(*c.Seed), true
	} else {
		req.Sampler.Seed = mrand.Uint64()
	}
	stop, err := stops(c.Stop)
	if err != nil {
		return req, err
	}
	req.Stop = stop
	req.Providers = providers(r.Header.Get(ProvidersHeader), c.SwarmProviders)
	return req, nil
}

// penalties reads presence_penalty, frequency_penalty and logit_bias into
// cfg; a token id of logit_bias must be in the model's vocabulary.
func (h *Handler) penalties(c common, cfg *blocks.SamplerConfig) error {
	for _, p := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"presence_penalty", c.PresencePenalty, &cfg.PresencePenalty}, {"frequency_penalty", c.FrequencyPenalty, &cfg.FrequencyPenalty}} {
		if p.v == nil {
			continue
		}
		if !(*p.v >= -2 && *p.v <= 2) {
			return badParam(p.name, fmt.Sprintf("%s %g, want -2 to 2", p.name, *p.v))
		}
		*p.dst = *p.v
	}
	if len(c.LogitBias) == 0 {
		return nil
	}
	m, err := h.gw.Model(c.Model)
	if err != nil {
		return err
	}
	vocab := m.Head.Info().Vocab
	cfg.LogitBias = make(map[int]float64, len(c.LogitBias))
	for k, b := range c.LogitBias {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= vocab {
			return badParam("logit_bias", fmt.Sprintf("logit_bias key %q, want a token id 0 to %d", k, vocab-1))
		}
		if !(b >= -100 && b <= 100) {
			return badParam("logit_bias", fmt.Sprintf("logit_bias %g for token %d, want -100 to 100", b, id))
		}
		cfg.LogitBias[id] = b
	}
	return nil
}

// set reports whether a raw field was given a value (not absent, not null).
func set(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

// stops reads "stop": null, a string or an array of at most 4 strings.
func stops(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badParam("stop", "stop must be a string or an array of strings")
	}
	if len(many) > 4 {
		return nil, badParam("stop", fmt.Sprintf("%d stop sequences, at most 4", len(many)))
	}
	return many, nil
}

// providers combines the header's and the field's allowlists: nil when
// neither is given (all allowed), their intersection when both are.
func providers(header string, field []string) []string {
	var fromHeader []string
	if strings.TrimSpace(header) != "" {
		fromHeader = []string{}
		for _, p := range strings.Split(header, ",") {
			if p = strings.TrimSpace(p); p != "" {
				fromHeader = append(fromHeader, p)
			}
		}
	}
	switch {
	case fromHeader == nil:
		return field
	case field == nil:
		return fromHeader
	}
	both := []string{}
	for _, p := range fromHeader {
		for _, q := range field {
			if p == q {
				both = append(both, p)
			}
		}
	}
	return both
}

// newID returns an id with the given prefix ("cmpl-", "chatcmpl-").
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (h *Handler) completions(w http.ResponseWriter, r *http.Request) {
	account, err := h.gw.Authenticate(r)
	if err != nil {
		h.writeError(w, err)
		return
	}
	var body CompletionRequest
	if err := h.decode(r, w, &body); err != nil {
		h.writeError(w, err)
		return
	}
	req, err := h.settings(r, body.common, "completions", account)
	if err == nil {
		req.Prompt, err = prompt(body.Prompt)
	}
	switch {
	case err != nil:
	case body.Echo:
		err = badParam("echo", "echo is not supported")
	case body.BestOf != nil && *body.BestOf != 1:
		err = badParam("best_of", "best_of other than 1 is not supported")
	case body.Suffix != nil && *body.Suffix != "":
		err = badParam("suffix", "suffix is not supported")
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	req.MaxTokens = DefaultCompletionMaxTokens
	if body.MaxTokens != nil {
		if *body.MaxTokens < 1 {
			h.writeError(w, badParam("max_tokens", fmt.Sprintf("max_tokens %d, want >= 1", *body.MaxTokens)))
			return
		}
		req.MaxTokens = *body.MaxTokens
	}
	if err := fits(req, "max_tokens"); err != nil {
		h.writeError(w, err)
		return
	}
	h.run(w, r, req, body.Stream, body.StreamOptions, false)
}

// prompt reads "prompt": a string or an array of one string.
func prompt(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", badParam("prompt", "prompt is required (\"\" starts from BOS alone)")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return "", badParam("prompt", "prompt must be a string or an array of one string (token arrays are not supported)")
	}
	if len(many) != 1 {
		return "", badParam("prompt", fmt.Sprintf("%d prompts: this API takes one", len(many)))
	}
	return many[0], nil
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	account, err := h.gw.Authenticate(r)
	if err != nil {
		h.writeError(w, err)
		return
	}
	var body ChatRequest
	if err := h.decode(r, w, &body); err != nil {
		h.writeError(w, err)
		return
	}
	req, err := h.settings(r, body.common, "chat", account)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if err := unimplemented(body); err != nil {
		h.writeError(w, err)
		return
	}
	if len(body.Messages) == 0 {
		h.writeError(w, badParam("messages", "messages must hold at least one message"))
		return
	}
	msgs := make([]Message, len(body.Messages))
	for i, m := range body.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			h.writeError(w, badParam(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("role %q, want system, developer, user, assistant or tool", m.Role)))
			return
		}
		if len(m.extra) > 0 {
			h.writeError(w, unsupported(fmt.Sprintf("messages[%d].%s", i, m.extra[0]), "this API reads a message's role, content and name (tool calling is not implemented)"))
			return
		}
		text, err := m.text(i)
		if err != nil {
			h.writeError(w, badParam(fmt.Sprintf("messages[%d].content", i), err.Error()))
			return
		}
		msgs[i] = Message{Role: m.Role, Content: text, Name: m.Name}
	}
	tpl := h.templates[req.Model]
	if tpl == nil {
		_, err := h.gw.Model(req.Model)
		h.writeError(w, err)
		return
	}
	// The template's rendering keeps its special tokens as text and is
	// encoded without adding any (transformers' apply_chat_template with
	// tokenize=True); the plain fallback's text is a completion prompt.
	if req.Prompt, err = tpl.Apply(Conversation{Messages: msgs, AddGenerationPrompt: true, Now: h.now()}); err != nil {
		h.writeError(w, err)
		return
	}
	req.Rendered = !tpl.Plain()
	req.MaxTokens = math.MaxInt32 // the rest of the context
	for _, mt := range []struct {
		name string
		v    *int
	}{{"max_tokens", body.MaxTokens}, {"max_completion_tokens", body.MaxCompletionTokens}} {
		if mt.v != nil {
			if *mt.v < 1 {
				h.writeError(w, badParam(mt.name, fmt.Sprintf("%s %d, want >= 1", mt.name, *mt.v)))
				return
			}
			req.MaxTokens = *mt.v
		}
	}
	if err := fits(req, "max_tokens"); err != nil {
		h.writeError(w, err)
		return
	}
	h.run(w, r, req, body.Stream, body.StreamOptions, true)
}

// unimplemented refuses the chat fields of features this API lacks (tool
// and function calling, log probabilities, audio, predicted outputs, web
// search, reasoning effort), naming the first one set.
func unimplemented(body ChatRequest) error {
	if t := strings.TrimSpace(string(body.Tools)); set(body.Tools) && t != "[]" {
		return unsupported("tools", "tool calling is not implemented")
	}
	if tc := strings.TrimSpace(string(body.ToolChoice)); set(body.ToolChoice) && tc != `"none"` {
		return unsupported("tool_choice", "tool calling is not implemented (only \"none\")")
	}
	for _, f := range []struct {
		name, why string
		raw       json.RawMessage
	}{
		{"parallel_tool_calls", "tool calling is not implemented", body.ParallelToolCalls},
		{"functions", "function calling is not implemented", body.Functions},
		{"function_call", "function calling is not implemented", body.FunctionCall},
		{"top_logprobs", "log probabilities are not returned", body.TopLogprobs},
		{"audio", "this API serves text only", body.Audio},
		{"prediction", "predicted outputs are not implemented", body.Prediction},
		{"web_search_options", "web search is not implemented", body.WebSearchOptions},
		{"reasoning_effort", "the models served are not reasoning models", body.ReasoningEffort},
	} {
		if set(f.raw) {
			return unsupported(f.name, f.why)
		}
	}
	if set(body.Modalities) {
		var m []string
		if err := json.Unmarshal(body.Modalities, &m); err != nil || len(m) != 1 || m[0] != "text" {
			return unsupported("modalities", "this API serves text only ([\"text\"])")
		}
	}
	return nil
}

// run generates and answers: one JSON response, or a stream of
// server-sent events started at the first piece of text (so that an error
// before it, e.g. no route, still gets its HTTP status).
func (h *Handler) run(w http.ResponseWriter, r *http.Request, req ingress.Request, stream bool, opts *StreamOptions, chat bool) {
	id := newID("cmpl-")
	if chat {
		id = newID("chatcmpl-")
	}
	created := h.now().Unix()
	fp := h.fps[req.Model]
	if !stream {
		var text strings.Builder
		res, err := h.gw.Generate(r.Context(), req, func(s string) error { text.WriteString(s); return nil })
		if err != nil {
			h.writeError(w, err)
			return
		}
		usage := Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens, TotalTokens: res.PromptTokens + res.CompletionTokens}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(RouteHeader, res.Route)
		var out any
		if chat {
			out = ChatCompletion{ID: id, Object: "chat.completion", Created: created, Model: req.Model, SystemFingerprint: fp, Usage: usage,
				Choices: []ChatChoice{{Message: ChatMessage{Role: "assistant", Content: text.String()}, FinishReason: res.FinishReason}}}
		} else {
			fr := res.FinishReason
			out = Completion{ID: id, Object: "text_completion", Created: created, Model: req.Model, SystemFingerprint: fp, Usage: usage,
				Choices: []CompletionChoice{{Text: text.String(), FinishReason: &fr}}}
		}
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	s := &sse{w: w, rc: http.NewResponseController(w)}
	includeUsage := opts != nil && opts.IncludeUsage
	var nullUsage any
	if includeUsage {
		nullUsage = json.RawMessage("null")
	}
	chunk := func(text *string, finish *string) any {
		if chat {
			c := ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model, SystemFingerprint: fp, Usage: nullUsage,
				Choices: []ChatChunkChoice{{Delta: ChatDelta{Content: text}, FinishReason: finish}}}
			if !s.started {
				empty := ""
				c.Choices[0].Delta = ChatDelta{Role: "assistant", Content: &empty}
			}
			return c
		}
		t := ""
		if text != nil {
			t = *text
		}
		return Completion{ID: id, Object: "text_completion", Created: created, Model: req.Model, SystemFingerprint: fp, Usage: nullUsage,
			Choices: []CompletionChoice{{Text: t, FinishReason: finish}}}
	}
	start := func() error {
		if s.started {
			return nil
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Trailer", RouteHeader)
		w.WriteHeader(http.StatusOK)
		if chat {
			if err := s.send(chunk(nil, nil)); err != nil {
				return err
			}
		}
		s.started = true
		return nil
	}
	res, err := h.gw.Generate(r.Context(), req, func(text string) error {
		if err := start(); err != nil {
			return err
		}
		return s.send(chunk(&text, nil))
	})
	if err != nil {
		if !s.started {
			h.writeError(w, err)
			return
		}
		status, d := apiError(err)
		h.gw.RecordError("openai", fmt.Sprint(status))
		_ = s.send(ErrorBody{Error: d})
		return
	}
	if err := start(); err != nil {
		return
	}
	fr := res.FinishReason
	if chat {
		_ = s.send(ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model, SystemFingerprint: fp, Usage: nullUsage,
			Choices: []ChatChunkChoice{{Delta: ChatDelta{}, FinishReason: &fr}}})
	} else {
		_ = s.send(chunk(nil, &fr))
	}
	if includeUsage {
		usage := Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens, TotalTokens: res.PromptTokens + res.CompletionTokens}
		if chat {
			_ = s.send(ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model, SystemFingerprint: fp, Choices: []ChatChunkChoice{}, Usage: usage})
		} else {
			_ = s.send(Completion{ID: id, Object: "text_completion", Created: created, Model: req.Model, SystemFingerprint: fp, Choices: []CompletionChoice{}, Usage: usage})
		}
	}
	_ = s.raw("[DONE]")
	w.Header().Set(RouteHeader, res.Route)
}

// sse writes server-sent events (https://html.spec.whatwg.org/multipage/
// server-sent-events.html): one "data: JSON" line and a blank line per
// event, flushed at once.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func (s *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(string(b))
}

func (s *sse) raw(data string) error {
	if _, err := io.WriteString(s.w, "data: "+data+"\n\n"); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
