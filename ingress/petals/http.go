package petals

import (
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
)

// HTTPPath is where chat.petals.dev's HTTP API (http_api.py) answers: one
// self-contained generation per POST.
const HTTPPath = "/api/v1/generate"

// HTTPReply is the answer of POST HTTPPath: {"ok": true, "outputs": TEXT}
// or {"ok": false, "traceback": MESSAGE}, with HTTP status 200 either way
// as http_api.py answers (401 for a missing or unknown API key, 405 for
// another method).
type HTTPReply struct {
	OK        bool    `json:"ok"`
	Outputs   *string `json:"outputs,omitempty"`
	Traceback string  `json:"traceback,omitempty"`
}

// params are the fields of one POST HTTPPath, from a JSON object or from
// form and query values (Flask's request.values): each value a string, a
// number or a bool.
type params map[string]any

func (p params) str(name string) (string, bool) {
	switch v := p[name].(type) {
	case nil:
		return "", false
	case string:
		return v, true
	default:
		return fmt.Sprint(v), true
	}
}

func (p params) float(name string) (*float64, error) {
	s, ok := p.str(name)
	if !ok || s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q, want a number", ErrProtocol, name, s)
	}
	return &f, nil
}

func (p params) int(name string) (*int, error) {
	f, err := p.float(name)
	if f == nil || err != nil {
		return nil, err
	}
	if *f != float64(int(*f)) {
		return nil, fmt.Errorf("%w: %s %g, want an integer", ErrProtocol, name, *f)
	}
	i := int(*f)
	return &i, nil
}

// flag reads a bool given as 0, 1, true or false (absent: false).
func (p params) flag(name string) (bool, error) {
	s, _ := p.str(name)
	switch strings.ToLower(s) {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, fmt.Errorf("%w: %s %s, want 0, 1, true or false", ErrProtocol, name, s)
}

// readParams reads the request's fields: a JSON object when the
// Content-Type says so, else form and query values.
func (h *Handler) readParams(w http.ResponseWriter, r *http.Request) (params, error) {
	r.Body = http.MaxBytesReader(w, r.Body, h.gw.MaxRequestBytes())
	p := params{}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/json" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: reading the body: %w", ErrProtocol, err)
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("%w: the body is not a JSON object: %w", ErrProtocol, err)
		}
		for k, v := range r.URL.Query() {
			if _, ok := p[k]; !ok {
				p[k] = v[0]
			}
		}
		return p, nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, fmt.Errorf("%w: reading the form: %w", ErrProtocol, err)
	}
	for k, v := range r.Form {
		p[k] = v[0]
	}
	return p, nil
}

// serveGenerate answers POST HTTPPath as http_api.py's http_api_generate:
// model (the only one served by default), inputs (default ""), do_sample
// (0 greedy, 1 samples with temperature, top_k and top_p),
// repetition_penalty, and max_new_tokens or max_length (a total counting
// the input's tokens, BOS included); outputs is the generated text alone.
// session_id (http_api.py's open_inference_session) is refused: sessions
// are the websocket API's.
func (h *Handler) serveGenerate(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, rep HTTPReply) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(rep)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(http.StatusMethodNotAllowed, HTTPReply{Traceback: fmt.Sprintf("protocol_error: %s %s, want POST", r.Method, HTTPPath)})
		return
	}
	account, err := h.gw.Authenticate(r)
	if err != nil {
		h.gw.RecordError("petals", ingress.ErrorCode(err))
		reply(ingress.AuthStatus(err, w.Header()), HTTPReply{Traceback: traceback(err)})
		return
	}
	out, err := h.generateHTTP(w, r, account)
	if err != nil {
		h.gw.RecordError("petals", ingress.ErrorCode(err))
		reply(http.StatusOK, HTTPReply{Traceback: traceback(err)})
		return
	}
	reply(http.StatusOK, HTTPReply{OK: true, Outputs: &out})
}

func (h *Handler) generateHTTP(w http.ResponseWriter, r *http.Request, account string) (string, error) {
	p, err := h.readParams(w, r)
	if err != nil {
		return "", err
	}
	if _, ok := p.str("session_id"); ok {
		return "", fmt.Errorf("%w: session_id is not supported by the HTTP API here: continue sessions over the websocket API (%s)", ErrProtocol, Path)
	}
	req := ingress.Request{API: "petals", Account: account, Sampler: blocks.SamplerConfig{RepetitionPenalty: 1},
		Providers: allowlist(r.Header.Get("X-Swarm-Providers"), nil)}
	req.Model, _ = p.str("model")
	if req.Model == "" {
		if ms := h.gw.Models(); len(ms) == 1 {
			req.Model = ms[0].Name
		}
	}
	req.Prompt, _ = p.str("inputs")
	sample, err := p.flag("do_sample")
	if err != nil {
		return "", err
	}
	f := map[string]*float64{}
	for _, name := range []string{"temperature", "top_p", "repetition_penalty"} {
		if f[name], err = p.float(name); err != nil {
			return "", err
		}
	}
	topK, err := p.int("top_k")
	if err != nil {
		return "", err
	}
	if sample {
		req.Sampler.Temperature = 1
		if f["temperature"] != nil {
			req.Sampler.Temperature = *f["temperature"]
		}
		if f["top_p"] != nil {
			req.Sampler.TopP = *f["top_p"]
		}
		if topK != nil {
			req.Sampler.TopK = *topK
		}
	}
	if f["repetition_penalty"] != nil {
		req.Sampler.RepetitionPenalty = *f["repetition_penalty"]
	}
	if s, ok := p.str("seed"); ok {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%w: seed %q, want an unsigned integer", ErrProtocol, s)
		}
		req.Sampler.Seed, req.Seeded = seed, true
	} else {
		req.Sampler.Seed = mrand.Uint64()
	}
	maxNew, err := p.int("max_new_tokens")
	if err != nil {
		return "", err
	}
	maxLength, err := p.int("max_length")
	if err != nil {
		return "", err
	}
	switch {
	case maxNew != nil:
		if *maxNew < 0 {
			return "", fmt.Errorf("%w: max_new_tokens %d, want >= 0", ErrProtocol, *maxNew)
		}
		req.MaxTokens = *maxNew
	case maxLength != nil:
		m, err := h.gw.Model(req.Model)
		if err != nil {
			return "", err
		}
		ids, err := m.Head.Tokenizer().Encode(req.Prompt, true)
		if err != nil {
			return "", fmt.Errorf("%w: encoding the inputs: %w", ingress.ErrBadRequest, err)
		}
		req.MaxTokens = max(*maxLength-len(ids), 0)
	default:
		return "", fmt.Errorf("%w: generate needs max_new_tokens or max_length", ErrProtocol)
	}
	if req.MaxTokens == 0 {
		_, err := h.gw.Model(req.Model) // nothing to generate, but the model must exist
		return "", err
	}
	var out strings.Builder
	_, err = h.gw.Generate(r.Context(), req, func(s string) error { out.WriteString(s); return nil })
	if err != nil {
		return "", err
	}
	return out.String(), nil
}
