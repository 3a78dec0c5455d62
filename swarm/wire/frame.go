package wire

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/swarmllm/swarm/swarm"
)

// Type is the frame type byte of the header. Its numbers are part of the
// protocol: never renumber.
type Type uint8

// Frame types (see the package doc for each payload).
const (
	TypeInvalid Type = iota
	TypeOpen
	TypeGranted
	TypeWaiting
	TypeStep
	TypeResult
	TypeClose
	TypeClosed
	TypeError
	typeEnd
)

var typeNames = [...]string{
	TypeInvalid: "Invalid",
	TypeOpen:    "Open",
	TypeGranted: "Granted",
	TypeWaiting: "Waiting",
	TypeStep:    "Step",
	TypeResult:  "Result",
	TypeClose:   "Close",
	TypeClosed:  "Closed",
	TypeError:   "Error",
}

// String returns the type's name, e.g. "Step", or "Type(42)".
func (t Type) String() string {
	if t < typeEnd {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// MaxNameLen is the longest session id or model name, in bytes.
const MaxNameLen = 255

// maxMessageLen is the longest Error message, in bytes (a u16 length).
const maxMessageLen = math.MaxUint16

// Frame is one protocol message: *Open, *Granted, *Waiting, *Step, *Result,
// *Close, *Closed or *Error. The set is closed; use a type switch.
type Frame interface {
	// Type is the header's type byte for the frame.
	Type() Type
	// validate reports why the frame cannot be encoded or was decoded
	// malformed, as an error that does not yet wrap ErrBadFrame.
	validate() error
}

// Open asks a server to open a session that processes Span of Model.
type Open struct {
	// SessionID is chosen by the client, or empty to let the server assign
	// one (returned in Granted). At most MaxNameLen bytes.
	SessionID string
	// Model is swarm.ModelInfo.Name of the model; the server answers
	// CodeWrongModel if it hosts another one.
	Model string
	// Span is the blocks this server must process for the session, 0-based
	// half-open; it must lie inside the server's hosted span.
	Span swarm.Span
	// MaxLength is the most tokens the session will hold (prompt plus
	// generated), which sizes the attention caches: lI_max + l_max of
	// paper 003 eq. (2). At least 1.
	MaxLength int
	// DType is the hidden-state dtype the client proposes for Step and
	// Result: swarm.DTypeF32, DTypeF16 or DTypeBF16.
	DType swarm.DType
	// AllocTimeout is how long, in seconds, the server may keep the session
	// waiting for cache room before answering CodeTimeout; 0 means "answer
	// at once". Finite and >= 0.
	AllocTimeout float64
}

// Granted answers Open: the session is open and its caches are reserved.
type Granted struct {
	// SessionID is the session's id (the client's, or one the server chose).
	SessionID string
	// DType is the hidden-state dtype of the session, which Step and Result
	// must use.
	DType swarm.DType
	// CacheBytes is the server's estimate of the attention-cache bytes it
	// reserved for the session: blocks processed * s_c(max_length)
	// (paper 003 eq. 2).
	CacheBytes int64
	// Waited is how long the session waited for room, in seconds.
	Waited float64
}

// Waiting tells a client that its Open is queued for cache room. A server
// may send several as the queue moves; Granted or Error ends the wait.
type Waiting struct {
	// SessionID is the session's id (possibly server-assigned already).
	SessionID string
	// Position is the number of sessions queued ahead (0 = next in line).
	Position int
	// QueueLen is the number of sessions queued in all, this one included.
	QueueLen int
	// EstimatedWait is the server's estimate of the time until the session
	// is admitted, in seconds (paper 003 eq. 20 applied to the queue).
	EstimatedWait float64
}

// Step sends hidden states through the session's blocks.
type Step struct {
	// SessionID names an open session.
	SessionID string
	// Position is the position of the first token of Hidden; a position
	// below the session's cached length truncates the cache first (replay).
	Position int
	// Hidden is [n_tokens, d_model] in the session's dtype.
	Hidden Hidden
}

// Result answers Step with the output hidden states of the session's blocks.
type Result struct {
	// SessionID names the session.
	SessionID string
	// Position echoes Step.Position.
	Position int
	// Compute is the server-side compute time for the step in seconds, so
	// the client can tell the round-trip time t_cj from k_j*tau_j (paper 003
	// eq. 1).
	Compute float64
	// Hidden is [n_tokens, d_model], same shape and dtype as the Step's.
	Hidden Hidden
}

// Close ends a session and frees its caches.
type Close struct {
	// SessionID names the session.
	SessionID string
}

// Closed confirms Close.
type Closed struct {
	// SessionID names the session.
	SessionID string
}

// Error reports a failure. It implements error, so a client can return a
// received Error frame as its error and callers can branch on Code with
// errors.As.
type Error struct {
	// SessionID names the session the error is about; empty for the
	// connection as a whole (e.g. a malformed frame).
	SessionID string
	// Code says what went wrong; never CodeInvalid.
	Code Code
	// Message is a human-readable explanation, at most 65535 bytes of UTF-8.
	Message string
}

// NewError builds an Error frame whose message is err's text, made valid
// UTF-8 and cut to the wire limit so that it always encodes.
func NewError(sessionID string, code Code, err error) *Error {
	msg := "unknown error"
	if err != nil {
		msg = err.Error()
	}
	return &Error{SessionID: sessionID, Code: code, Message: clipUTF8(msg, maxMessageLen)}
}

// Error implements error.
func (e *Error) Error() string {
	if e.SessionID == "" {
		return fmt.Sprintf("wire: remote error %s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("wire: remote error %s (session %q): %s", e.Code, e.SessionID, e.Message)
}

// Type implements Frame.
func (*Open) Type() Type { return TypeOpen }

// Type implements Frame.
func (*Granted) Type() Type { return TypeGranted }

// Type implements Frame.
func (*Waiting) Type() Type { return TypeWaiting }

// Type implements Frame.
func (*Step) Type() Type { return TypeStep }

// Type implements Frame.
func (*Result) Type() Type { return TypeResult }

// Type implements Frame.
func (*Close) Type() Type { return TypeClose }

// Type implements Frame.
func (*Closed) Type() Type { return TypeClosed }

// Type implements Frame.
func (*Error) Type() Type { return TypeError }

func (f *Open) validate() error {
	if err := checkName("session_id", f.SessionID, true); err != nil {
		return err
	}
	if err := checkName("model", f.Model, false); err != nil {
		return err
	}
	if f.Span.Start < 0 || f.Span.End <= f.Span.Start || int64(f.Span.End) > math.MaxUint32 {
		return fmt.Errorf("span %s: want 0 <= START < END < 2^32", f.Span)
	}
	if f.MaxLength < 1 || int64(f.MaxLength) > math.MaxUint32 {
		return fmt.Errorf("max_length %d: want 1 .. 2^32-1 tokens", f.MaxLength)
	}
	if err := checkWireDType(f.DType); err != nil {
		return err
	}
	return checkSeconds("alloc_timeout", f.AllocTimeout)
}

func (f *Granted) validate() error {
	if err := checkName("session_id", f.SessionID, false); err != nil {
		return err
	}
	if err := checkWireDType(f.DType); err != nil {
		return err
	}
	if f.CacheBytes < 0 {
		return fmt.Errorf("cache_bytes %d: want >= 0", f.CacheBytes)
	}
	return checkSeconds("waited", f.Waited)
}

func (f *Waiting) validate() error {
	if err := checkName("session_id", f.SessionID, true); err != nil {
		return err
	}
	if f.Position < 0 || f.QueueLen <= f.Position || int64(f.QueueLen) > math.MaxUint32 {
		return fmt.Errorf("position %d of queue_len %d: want 0 <= position < queue_len < 2^32", f.Position, f.QueueLen)
	}
	return checkSeconds("estimated_wait", f.EstimatedWait)
}

func (f *Step) validate() error {
	if err := checkName("session_id", f.SessionID, false); err != nil {
		return err
	}
	if err := checkPosition(f.Position); err != nil {
		return err
	}
	return f.Hidden.Validate()
}

func (f *Result) validate() error {
	if err := checkName("session_id", f.SessionID, false); err != nil {
		return err
	}
	if err := checkPosition(f.Position); err != nil {
		return err
	}
	if err := checkSeconds("compute", f.Compute); err != nil {
		return err
	}
	return f.Hidden.Validate()
}

func (f *Close) validate() error { return checkName("session_id", f.SessionID, false) }

func (f *Closed) validate() error { return checkName("session_id", f.SessionID, false) }

func (f *Error) validate() error {
	if err := checkName("session_id", f.SessionID, true); err != nil {
		return err
	}
	if f.Code == CodeInvalid {
		return fmt.Errorf("error code 0 is invalid")
	}
	if len(f.Message) > maxMessageLen || !utf8.ValidString(f.Message) {
		return fmt.Errorf("error message: want at most %d bytes of valid UTF-8", maxMessageLen)
	}
	return nil
}

func checkName(field, s string, emptyOK bool) error {
	switch {
	case s == "" && !emptyOK:
		return fmt.Errorf("%s is empty", field)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%s is %d bytes, want at most %d", field, len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q is not valid UTF-8", field, s)
	}
	return nil
}

func checkSeconds(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s = %g seconds: want finite and >= 0", field, v)
	}
	return nil
}

func checkPosition(p int) error {
	if p < 0 || int64(p) > math.MaxUint32 {
		return fmt.Errorf("position %d: want 0 .. 2^32-1", p)
	}
	return nil
}

// clipUTF8 returns s made valid UTF-8 and cut to at most n bytes on a rune
// boundary.
func clipUTF8(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
