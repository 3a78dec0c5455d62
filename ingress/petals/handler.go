package petals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
)

// Path is where the handler is mounted.
const Path = "/api/v2/generate"

// DefaultStepTimeout is how long the handler waits for the client's next
// message (chat.petals.dev's STEP_TIMEOUT, 5 minutes).
const DefaultStepTimeout = 5 * time.Minute

// ErrProtocol marks a message that breaks the protocol (wrong type, missing
// or out-of-range field); the message names it.
var ErrProtocol = errors.New("petals: protocol error")

// Handler serves the websocket API over a Gateway.
type Handler struct {
	gw          *ingress.Gateway
	up          websocket.Upgrader
	stepTimeout time.Duration
}

// New returns the handler of Path and HTTPPath.
func New(gw *ingress.Gateway) *Handler {
	return &Handler{gw: gw, stepTimeout: DefaultStepTimeout,
		up: websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}}
}

// Request is a client message: open_inference_session or generate.
type Request struct {
	Type string `json:"type"`
	// open_inference_session
	Model     string `json:"model"`
	MaxLength *int   `json:"max_length"`
	// generate
	Inputs             *string  `json:"inputs"`
	MaxNewTokens       *int     `json:"max_new_tokens"`
	DoSample           any      `json:"do_sample"`
	Temperature        *float64 `json:"temperature"`
	TopK               *int     `json:"top_k"`
	TopP               *float64 `json:"top_p"`
	RepetitionPenalty  *float64 `json:"repetition_penalty"`
	StopSequence       *string  `json:"stop_sequence"`
	ExtraStopSequences []string `json:"extra_stop_sequences"`
	// Extensions: a sampling seed, and the trusted-provider allowlist
	// (also the X-Swarm-Providers header).
	Seed           *uint64  `json:"seed"`
	SwarmProviders []string `json:"swarm_providers"`
}

// Reply is a server message.
type Reply struct {
	OK         bool    `json:"ok"`
	Outputs    *string `json:"outputs,omitempty"`
	Stop       *bool   `json:"stop,omitempty"`
	TokenCount *int    `json:"token_count,omitempty"`
	Traceback  string  `json:"traceback,omitempty"`
}

// traceback is the one place where errors become this protocol's error
// replies: PETALS clients show the traceback string and match substrings
// in it ("Maximum length exceeded", "attention cache is full").
func traceback(err error) string {
	kind := ingress.ErrorCode(err)
	switch {
	case errors.Is(err, ErrProtocol):
		kind = "protocol_error"
	case errors.Is(err, ingress.ErrMaxLength):
		return fmt.Sprintf("Maximum length exceeded (max_length of the session): %v", err)
	}
	return fmt.Sprintf("%s: %v", kind, err)
}

// conn is one client connection.
type conn struct {
	h       *Handler
	ws      *websocket.Conn
	account string
	header  string
}

// ServeHTTP serves the websocket API at Path and the HTTP API at HTTPPath.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == HTTPPath {
		h.serveGenerate(w, r)
		return
	}
	account, err := h.gw.Authenticate(r)
	if err != nil {
		h.gw.RecordError("petals", ingress.ErrorCode(err))
		status := ingress.AuthStatus(err, w.Header())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(Reply{OK: false, Traceback: traceback(err)})
		return
	}
	ws, err := h.up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer ws.Close()
	ws.SetReadLimit(h.gw.MaxRequestBytes())
	c := &conn{h: h, ws: ws, account: account, header: r.Header.Get("X-Swarm-Providers")}
	if err := c.serve(r.Context()); err != nil && !isClosed(err) {
		h.gw.RecordError("petals", ingress.ErrorCode(err))
		_ = c.send(Reply{OK: false, Traceback: traceback(err)})
	}
}

// isClosed reports whether err is the client going away.
func isClosed(err error) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) || errors.Is(err, websocket.ErrCloseSent)
}

func (c *conn) read() (Request, error) {
	var req Request
	_ = c.ws.SetReadDeadline(time.Now().Add(c.h.stepTimeout))
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		return req, err
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return req, fmt.Errorf("%w: message is not JSON: %w", ErrProtocol, err)
	}
	return req, nil
}

func (c *conn) send(r Reply) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.h.stepTimeout))
	return c.ws.WriteJSON(r)
}

// serve runs the session of one connection.
func (c *conn) serve(ctx context.Context) error {
	req, err := c.read()
	if err != nil {
		return err
	}
	if req.Type != "open_inference_session" {
		return fmt.Errorf("%w: the first message must be of type open_inference_session, got %q", ErrProtocol, req.Type)
	}
	if req.MaxLength == nil || *req.MaxLength < 1 {
		return fmt.Errorf("%w: open_inference_session needs max_length >= 1 (tokens, prefix and all inputs included)", ErrProtocol)
	}
	model := req.Model
	if model == "" {
		if ms := c.h.gw.Models(); len(ms) == 1 {
			model = ms[0].Name
		}
	}
	maxLength := *req.MaxLength
	sess, err := c.h.gw.Open(ctx, ingress.SessionRequest{Model: model, MaxLength: maxLength, Account: c.account, API: "petals",
		Providers: allowlist(c.header, req.SwarmProviders)})
	if err != nil {
		return err
	}
	defer sess.Close()
	if err := c.send(Reply{OK: true}); err != nil {
		return err
	}
	used := 0
	for {
		req, err := c.read()
		if err != nil {
			return err
		}
		n, err := c.generate(ctx, sess, req, used, maxLength)
		used += n
		if err != nil {
			return err
		}
	}
}

// generate runs one generate message of a session that holds used of its
// maxLength positions, and returns the positions it used.
//
// Without stop_sequence it generates max_new_tokens tokens (or up to a
// total length of max_length) and sends one reply with stop: true. With
// stop_sequence it keeps generating, sending a reply (stop: false) every
// max_new_tokens tokens, until the text so far ends with stop_sequence or
// one of extra_stop_sequences (the stop text is included, as PETALS does),
// the model ends the text (stop: true), or the session is full
// ("Maximum length exceeded").
func (c *conn) generate(ctx context.Context, sess *ingress.Session, req Request, used, maxLength int) (int, error) {
	if req.Type != "generate" {
		return 0, fmt.Errorf("%w: expected a message of type generate, got %q", ErrProtocol, req.Type)
	}
	p := ingress.GenerateParams{Sampler: blocks.SamplerConfig{RepetitionPenalty: 1}}
	if req.Inputs != nil {
		p.Input = *req.Inputs
	}
	sample, err := truthy(req.DoSample)
	if err != nil {
		return 0, err
	}
	if sample {
		p.Sampler.Temperature = 1
		if req.Temperature != nil {
			p.Sampler.Temperature = *req.Temperature
		}
		if req.TopK != nil {
			p.Sampler.TopK = *req.TopK
		}
		if req.TopP != nil {
			p.Sampler.TopP = *req.TopP
		}
	}
	if req.RepetitionPenalty != nil {
		p.Sampler.RepetitionPenalty = *req.RepetitionPenalty
	}
	if req.Seed != nil {
		p.Sampler.Seed, p.Seeded = *req.Seed, true
	} else {
		p.Sampler.Seed = mrand.Uint64()
	}
	room := max(maxLength-used, 0)
	var stops []string
	if req.StopSequence != nil {
		stops = append([]string{*req.StopSequence}, req.ExtraStopSequences...)
	}
	loop := len(stops) > 0
	step := 0 // tokens per reply while looping; 0 = one reply at the end
	switch {
	case req.MaxNewTokens != nil:
		if *req.MaxNewTokens < 0 {
			return 0, fmt.Errorf("%w: max_new_tokens %d, want >= 0", ErrProtocol, *req.MaxNewTokens)
		}
		p.MaxTokens, step = *req.MaxNewTokens, *req.MaxNewTokens
	case req.MaxLength != nil:
		p.MaxTokens = max(*req.MaxLength-used, 0) // a total length
	default:
		return 0, fmt.Errorf("%w: generate needs max_new_tokens or max_length", ErrProtocol)
	}
	if loop {
		p.MaxTokens = room
	}
	var all, chunk strings.Builder
	count := 0
	flush := func(stop bool) error {
		out, n := chunk.String(), count
		chunk.Reset()
		count = 0
		return c.send(Reply{OK: true, Outputs: &out, Stop: &stop, TokenCount: &n})
	}
	res, err := sess.Generate(ctx, p, func(text string) error {
		chunk.WriteString(text)
		all.WriteString(text)
		count++
		if !loop {
			return nil
		}
		for _, s := range stops {
			if strings.HasSuffix(all.String(), s) {
				return ingress.ErrDone
			}
		}
		if step > 0 && count >= step {
			return flush(false)
		}
		return nil
	})
	n := res.PromptTokens + res.CompletionTokens
	if err != nil {
		return n, err
	}
	if loop && res.FinishReason == "length" {
		return n, fmt.Errorf("%w: %d tokens generated without meeting the stop sequence", ingress.ErrMaxLength, res.CompletionTokens)
	}
	return n, flush(true)
}

// truthy reads do_sample: a bool, a number (0/1) or null.
func truthy(v any) (bool, error) {
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	case float64:
		return x != 0, nil
	}
	return false, fmt.Errorf("%w: do_sample %v, want 0, 1, true or false", ErrProtocol, v)
}

// allowlist combines the header's comma-separated providers and the
// field's: nil when neither is given.
func allowlist(header string, field []string) []string {
	if strings.TrimSpace(header) == "" {
		return field
	}
	var out []string
	for _, p := range strings.Split(header, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
