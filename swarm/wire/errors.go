package wire

import (
	"errors"
	"fmt"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrBadFrame marks a frame that is malformed: bad magic, unknown type,
	// reserved flags set, truncated or over-long payload, invalid field.
	// Encode returns it too for a frame that cannot be encoded.
	ErrBadFrame = errors.New("wire: bad frame")
	// ErrTooLarge marks a frame whose payload length exceeds the receiver's
	// limit. It wraps ErrBadFrame: errors.Is(ErrTooLarge, ErrBadFrame) holds.
	ErrTooLarge error = &subError{msg: "wire: frame too large", parent: ErrBadFrame}
	// ErrVersion marks a frame of a protocol version this build does not
	// speak; the concrete error is a *VersionError.
	ErrVersion = errors.New("wire: unsupported protocol version")
	// ErrBadTensor marks hidden states whose shape does not match their data
	// or whose dtype cannot go on the wire.
	ErrBadTensor = errors.New("wire: bad tensor")
)

// subError is a sentinel that is a special case of another sentinel.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// VersionError is returned by Decode and Unmarshal for a frame whose header
// carries a protocol version other than swarm.ProtocolVersion. It matches
// ErrVersion with errors.Is.
type VersionError struct {
	// Got is the version in the frame header.
	Got uint16
	// Want is the version this build speaks (swarm.ProtocolVersion).
	Want uint16
}

// Error implements error.
func (e *VersionError) Error() string {
	return fmt.Sprintf("wire: unsupported protocol version %d (this peer speaks version %d)", e.Got, e.Want)
}

// Is reports whether target is ErrVersion.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// Code is the numeric error code of an Error frame. The zero value is invalid.
type Code uint16

// Error codes. Their numbers are part of the protocol: never renumber.
const (
	CodeInvalid Code = iota
	// CodeBadFrame: the peer sent a malformed or oversized frame.
	CodeBadFrame
	// CodeUnknownSession: a Step or Close named a session the server does
	// not hold (never opened, closed, or lost in a restart).
	CodeUnknownSession
	// CodeNoRoom: the session can never fit in the server's memory, even
	// with no other session open.
	CodeNoRoom
	// CodeTimeout: the session waited its whole alloc_timeout for room.
	CodeTimeout
	// CodeBadSpan: the span is empty or not hosted by the server.
	CodeBadSpan
	// CodeWrongModel: the server hosts another model.
	CodeWrongModel
	// CodeUnsupportedVersion: the frame's protocol version is unknown.
	CodeUnsupportedVersion
	// CodeInternal: the server failed; the message says how.
	CodeInternal
	// CodeShuttingDown: the server is stopping and admits no new session.
	CodeShuttingDown
	// CodeBadPosition: a Step's position does not follow the session's
	// cache (beyond its length or past max_length).
	CodeBadPosition
	// CodeBadDType: the proposed hidden-state dtype is not supported, or a
	// Step's dtype differs from the session's.
	CodeBadDType
	// CodeBadShape: a Step's hidden states are not [n, d_model] of the model.
	CodeBadShape
	// CodeBadValue: a Step's hidden states hold NaN or an infinity.
	CodeBadValue
	// CodeDuplicateSession: an Open named a session id already open or
	// waiting on the connection.
	CodeDuplicateSession
	// CodeSessionExpired: the server closed the session after it was idle
	// (no step) for the server's idle timeout; its caches are released. The
	// client opens a new session (and replays its history) to go on.
	CodeSessionExpired
	// CodeTooManySessions: the connection or the remote peer already holds
	// the most sessions the server allows it; other servers may have room.
	CodeTooManySessions
	codeEnd
)

var codeNames = [...]string{
	CodeInvalid:            "Invalid",
	CodeBadFrame:           "BadFrame",
	CodeUnknownSession:     "UnknownSession",
	CodeNoRoom:             "NoRoom",
	CodeTimeout:            "Timeout",
	CodeBadSpan:            "BadSpan",
	CodeWrongModel:         "WrongModel",
	CodeUnsupportedVersion: "UnsupportedVersion",
	CodeInternal:           "Internal",
	CodeShuttingDown:       "ShuttingDown",
	CodeBadPosition:        "BadPosition",
	CodeBadDType:           "BadDType",
	CodeBadShape:           "BadShape",
	CodeBadValue:           "BadValue",
	CodeDuplicateSession:   "DuplicateSession",
	CodeSessionExpired:     "SessionExpired",
	CodeTooManySessions:    "TooManySessions",
}

// String returns the code's name, e.g. "NoRoom", or "Code(42)" for a code
// this build does not know.
func (c Code) String() string {
	if c < codeEnd {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint16(c))
}

// Known reports whether c is one of the codes of this build.
func (c Code) Known() bool { return c > CodeInvalid && c < codeEnd }

// CodeOf maps an error from this package to the code of the Error frame a
// receiver answers with: CodeUnsupportedVersion for ErrVersion, CodeBadFrame
// for ErrBadFrame (ErrTooLarge included) and ErrBadTensor, CodeInternal otherwise.
// Servers map their own errors (admission, engine) first and fall back to it.
func CodeOf(err error) Code {
	switch {
	case errors.Is(err, ErrVersion):
		return CodeUnsupportedVersion
	case errors.Is(err, ErrBadFrame), errors.Is(err, ErrBadTensor):
		return CodeBadFrame
	}
	return CodeInternal
}
