package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/swarmllm/swarm/ingress"
)

// ErrBadRequest marks a request body this front end rejects (bad JSON, a
// field out of range, an unsupported feature); the message names the field.
var ErrBadRequest = errors.New("openai: bad request")

// paramError is a bad request naming the offending field ("param").
type paramError struct {
	param string
	err   error
}

func (e *paramError) Error() string { return e.err.Error() }
func (e *paramError) Unwrap() error { return e.err }

// badParam returns an ErrBadRequest naming param.
func badParam(param, msg string) error {
	return &paramError{param: param, err: errors.Join(ErrBadRequest, errors.New(msg))}
}

// apiError maps an error to its HTTP status and OpenAI error object. It is
// the one place where errors become statuses on this boundary:
//
//	400 invalid_request_error  bad body, bad setting, template failure
//	    (code context_length_exceeded for a prompt or session too long)
//	401 invalid_request_error  missing or unknown API key (invalid_api_key)
//	404 invalid_request_error  unknown model (model_not_found)
//	502 server_error           the chosen servers failed, retries too (upstream_error)
//	503 server_error           no allowed route covers the model (no_route)
//	499 (logged only)          the client went away
//	500 server_error           anything else
func apiError(err error) (int, ErrorDetail) {
	d := ErrorDetail{Message: err.Error()}
	str := func(s string) *string { return &s }
	var pe *paramError
	switch {
	case errors.As(err, &pe):
		d.Type, d.Param, d.Code = "invalid_request_error", str(pe.param), str("invalid_value")
		return http.StatusBadRequest, d
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
	case errors.Is(err, ingress.ErrUnknownModel):
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: d})
}
