package ingress

import "errors"

// Sentinel errors callers (the front ends) branch on with errors.Is; each
// front end maps them to its protocol's status in exactly one function.
var (
	// ErrBadOption: an Option or Config value is out of range.
	ErrBadOption = errors.New("ingress: bad option")
	// ErrBadRequest: the request itself is malformed or out of range (a
	// bad sampling setting, a prompt longer than the model's context).
	ErrBadRequest = errors.New("ingress: bad request")
	// ErrUnauthorized: API keys are required and the request has none or
	// an unknown one.
	ErrUnauthorized = errors.New("ingress: unauthorized")
	// ErrUnknownModel: the ingress does not serve the requested model.
	ErrUnknownModel = errors.New("ingress: unknown model")
	// ErrNoRoute: no allowed replica and no chain of allowed block servers
	// can serve the model now.
	ErrNoRoute = errors.New("ingress: no route")
	// ErrUpstream: the chosen servers failed and no retry succeeded.
	ErrUpstream = errors.New("ingress: upstream failed")
	// ErrMaxLength: a session would exceed its max_length.
	ErrMaxLength = errors.New("ingress: maximum length exceeded")
	// ErrRateLimited: the request's API key (or, anonymous, its client
	// address) is over its rate limit; see RateLimitError.
	ErrRateLimited = errors.New("ingress: rate limited")
)
