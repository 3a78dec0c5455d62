package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/swarmllm/swarm/ingress"
)

// ErrBadRequest marks a request body this front end rejects (bad JSON, a
// field out of range, an unsupported feature); the message names the field.
var ErrBadRequest = errors.New("openai: bad request")

// ErrNotFound marks a path that is not an endpoint of this API.
var ErrNotFound = errors.New("openai: not found")

// ErrMethodNotAllowed marks an endpoint asked with a method it does not
// serve.
var ErrMethodNotAllowed = errors.New("openai: method not allowed")

// paramError is a bad request naming the offending field ("param"); code is
// OpenAI's error code (invalid_value, unsupported_parameter).
type paramError struct {
	param, code, msg string
}

func (e *paramError) Error() string { return e.msg }
func (e *paramError) Unwrap() error { return ErrBadRequest }

// badParam returns an ErrBadRequest naming param, a value out of range.
func badParam(param, msg string) error {
	return &paramError{param: param, code: "invalid_value", msg: msg}
}

// unsupported returns an ErrBadRequest naming param, a parameter this API
// does not implement (OpenAI's unsupported_parameter), rather than ignore.
func unsupported(param, msg string) error {
	return &paramError{param: param, code: "unsupported_parameter", msg: fmt.Sprintf("%s is not supported: %s", param, msg)}
}

// sentinels are the prefixes message strips: a client reads what went
// wrong, not which Go package noticed.
var sentinels = []error{ErrBadRequest, ErrNotFound, ErrMethodNotAllowed, ingress.ErrBadRequest, ingress.ErrUnauthorized,
	ingress.ErrUnknownModel, ingress.ErrNoRoute, ingress.ErrUpstream, ingress.ErrMaxLength, ingress.ErrRateLimited}

// message is err's text without leading sentinel prefixes ("openai: bad
// request: ") and without this package's name ("openai: chat template: "
// reads "chat template: ").
func message(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "openai: "); ok && errors.Is(err, ErrTemplate) {
		return rest
	}
	for trimmed := true; trimmed; {
		trimmed = false
		for _, s := range sentinels {
			if rest, ok := strings.CutPrefix(msg, s.Error()+": "); ok {
				msg, trimmed = rest, true
			}
		}
	}
	return msg
}

// apiError maps an error to its HTTP status and OpenAI error object. It is
// the one place where errors become statuses on this boundary:
//
//	400 invalid_request_error  bad body, bad setting, template failure
//	    (code context_length_exceeded for a prompt or session too long)
//	401 invalid_request_error  missing or unknown API key (invalid_api_key)
//	404 invalid_request_error  unknown model (model_not_found), unknown path (unknown_url)
//	405 invalid_request_error  a method the endpoint does not serve (method_not_allowed)
//	429 requests               over the key's rate limit (rate_limit_exceeded), with Retry-After
//	502 server_error           the chosen servers failed, retries too (upstream_error)
//	503 server_error           no allowed route covers the model (no_route)
//	499 (logged only)          the client went away
//	500 server_error           anything else
func apiError(err error) (int, ErrorDetail) {
	d := ErrorDetail{Message: message(err)}
	str := func(s string) *string { return &s }
	var pe *paramError
	switch {
	case errors.As(err, &pe):
		d.Type, d.Param, d.Code = "invalid_request_error", str(pe.param), str(pe.code)
		return http.StatusBadRequest, d
	case errors.Is(err, ErrNotFound):
		d.Type, d.Code = "invalid_request_error", str("unknown_url")
		return http.StatusNotFound, d
	case errors.Is(err, ErrMethodNotAllowed):
		d.Type, d.Code = "invalid_request_error", str("method_not_allowed")
		return http.StatusMethodNotAllowed, d
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrTemplate):
		d.Type, d.Code = "invalid_request_error", str("invalid_request")
		return http.StatusBadRequest, d
	case errors.Is(err, ingress.ErrMaxLength):
		d.Type, d.Code = "invalid_request_error", str("context_length_exceeded")
		return http.StatusBadRequest, d
	case errors.Is(err, ingress.ErrBadRequest):
		d.Type, d.Code = "invalid_request_error", str("invalid_request")
		return http.StatusBadRequest, d
	case errors.Is(err, ingress.ErrUnauthorized):
		d.Type, d.Code = "invalid_request_error", str("invalid_api_key")
		return http.StatusUnauthorized, d
	case errors.Is(err, ingress.ErrRateLimited):
		d.Type, d.Code = "requests", str("rate_limit_exceeded")
		return http.StatusTooManyRequests, d
	case errors.Is(err, ingress.ErrUnknownModel):
		d.Message = "the model does not exist: " + d.Message
		d.Type, d.Param, d.Code = "invalid_request_error", str("model"), str("model_not_found")
		return http.StatusNotFound, d
	case errors.Is(err, ingress.ErrNoRoute):
		d.Type, d.Code = "server_error", str("no_route")
		return http.StatusServiceUnavailable, d
	case errors.Is(err, ingress.ErrUpstream):
		d.Type, d.Code = "server_error", str("upstream_error")
		return http.StatusBadGateway, d
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		d.Type, d.Code = "server_error", str("canceled")
		return 499, d
	}
	d.Type, d.Code = "server_error", str("internal_error")
	return http.StatusInternalServerError, d
}

// writeError answers err as OpenAI's error JSON with its status, and counts
// it.
func (h *Handler) writeError(w http.ResponseWriter, err error) {
	status, d := apiError(err)
	h.gw.RecordError("openai", strconv.Itoa(status))
	if after := ingress.RetryAfter(err); after > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(after))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: d})
}
