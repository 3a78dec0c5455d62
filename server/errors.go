package server

import (
	"errors"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/server/admission"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// Reasons a request is refused; errorCode maps them to wire codes.
var (
	errDraining       = errors.New("server: shutting down")
	errWrongModel     = errors.New("server: wrong model")
	errBadSpan        = errors.New("server: span not hosted")
	errTooLong        = errors.New("server: session too long")
	errDuplicate      = errors.New("server: duplicate session id")
	errUnknownSession = errors.New("server: unknown session")
	errDType          = errors.New("server: wrong hidden-state dtype")
	errShape          = errors.New("server: wrong hidden-state shape")
	errNotFinite      = errors.New("server: hidden states not finite")
	errOverload       = errors.New("server: too many steps in flight")
	errExpired        = errors.New("server: session expired")
	errTooMany        = errors.New("server: too many sessions")
)

// errorCode is the one place where server errors become wire error codes.
func errorCode(err error) wire.Code {
	switch {
	case errors.Is(err, errDraining), errors.Is(err, admission.ErrClosed):
		return wire.CodeShuttingDown
	case errors.Is(err, admission.ErrNeverFits):
		return wire.CodeNoRoom
	case errors.Is(err, admission.ErrTimeout):
		return wire.CodeTimeout
	case errors.Is(err, errWrongModel):
		return wire.CodeWrongModel
	case errors.Is(err, errBadSpan), errors.Is(err, swarm.ErrBadSpan):
		return wire.CodeBadSpan
	case errors.Is(err, errTooLong), errors.Is(err, blocks.ErrPosition):
		return wire.CodeBadPosition
	case errors.Is(err, errUnknownSession):
		return wire.CodeUnknownSession
	case errors.Is(err, errDuplicate):
		return wire.CodeDuplicateSession
	case errors.Is(err, errExpired):
		return wire.CodeSessionExpired
	case errors.Is(err, errTooMany):
		return wire.CodeTooManySessions
	case errors.Is(err, errDType):
		return wire.CodeBadDType
	case errors.Is(err, errNotFinite):
		return wire.CodeBadValue
	case errors.Is(err, errShape), errors.Is(err, blocks.ErrArgument):
		return wire.CodeBadShape
	case errors.Is(err, admission.ErrBadRequest):
		return wire.CodeBadPosition
	}
	return wire.CodeOf(err)
}
