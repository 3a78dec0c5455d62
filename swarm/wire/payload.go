package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// Sizes of the payload building blocks (see the package doc).
const (
	strPrefix    = 2         // u16 length
	tensorPrefix = 1 + 4 + 4 // dtype u8, n_tokens u32, d_model u32
)

// payloadLen is the encoded payload size of a valid frame, in bytes.
func payloadLen(f Frame) int {
	switch f := f.(type) {
	case *Open:
		return strPrefix + len(f.SessionID) + strPrefix + len(f.Model) + 4 + 4 + 4 + 1 + 8
	case *Granted:
		return strPrefix + len(f.SessionID) + 1 + 8 + 8
	case *Waiting:
		return strPrefix + len(f.SessionID) + 4 + 4 + 8
	case *Step:
		return strPrefix + len(f.SessionID) + 4 + tensorPrefix + f.Hidden.WireBytes()
	case *Result:
		return strPrefix + len(f.SessionID) + 4 + 8 + tensorPrefix + f.Hidden.WireBytes()
	case *Close:
		return strPrefix + len(f.SessionID)
	case *Closed:
		return strPrefix + len(f.SessionID)
	case *Error:
		return strPrefix + len(f.SessionID) + 2 + strPrefix + len(f.Message)
	}
	return 0
}

// appendPayload appends the payload of a validated frame.
func appendPayload(b []byte, f Frame) ([]byte, error) {
	le := binary.LittleEndian
	switch f := f.(type) {
	case *Open:
		b = appendStr(b, f.SessionID)
		b = appendStr(b, f.Model)
		b = le.AppendUint32(b, uint32(f.Span.Start))
		b = le.AppendUint32(b, uint32(f.Span.End))
		b = le.AppendUint32(b, uint32(f.MaxLength))
		b = append(b, byte(f.DType))
		return le.AppendUint64(b, math.Float64bits(f.AllocTimeout)), nil
	case *Granted:
		b = appendStr(b, f.SessionID)
		b = append(b, byte(f.DType))
		b = le.AppendUint64(b, uint64(f.CacheBytes))
		return le.AppendUint64(b, math.Float64bits(f.Waited)), nil
	case *Waiting:
		b = appendStr(b, f.SessionID)
		b = le.AppendUint32(b, uint32(f.Position))
		b = le.AppendUint32(b, uint32(f.QueueLen))
		return le.AppendUint64(b, math.Float64bits(f.EstimatedWait)), nil
	case *Step:
		b = appendStr(b, f.SessionID)
		b = le.AppendUint32(b, uint32(f.Position))
		return appendHidden(b, f.Hidden)
	case *Result:
		b = appendStr(b, f.SessionID)
		b = le.AppendUint32(b, uint32(f.Position))
		b = le.AppendUint64(b, math.Float64bits(f.Compute))
		return appendHidden(b, f.Hidden)
	case *Close:
		return appendStr(b, f.SessionID), nil
	case *Closed:
		return appendStr(b, f.SessionID), nil
	case *Error:
		b = appendStr(b, f.SessionID)
		b = le.AppendUint16(b, uint16(f.Code))
		return appendStr(b, f.Message), nil
	}
	return b, fmt.Errorf("unknown frame %T", f)
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendHidden(b []byte, h Hidden) ([]byte, error) {
	b = append(b, byte(h.DType))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.NTokens))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.DModel))
	return AppendTensor(b, h.DType, h.Data)
}

// parsePayload decodes and validates the payload of a frame of type t.
func parsePayload(t Type, p []byte) (Frame, error) {
	r := payloadReader{b: p}
	var f Frame
	switch t {
	case TypeOpen:
		o := &Open{SessionID: r.str("session_id"), Model: r.str("model")}
		o.Span.Start = int(r.u32("span_start"))
		o.Span.End = int(r.u32("span_end"))
		o.MaxLength = int(r.u32("max_length"))
		o.DType = swarm.DType(r.u8("dtype"))
		o.AllocTimeout = r.f64("alloc_timeout")
		f = o
	case TypeGranted:
		g := &Granted{SessionID: r.str("session_id"), DType: swarm.DType(r.u8("dtype"))}
		cb := r.u64("cache_bytes")
		if cb > math.MaxInt64 && r.err == nil {
			r.err = fmt.Errorf("cache_bytes %d exceeds 2^63-1", cb)
		}
		g.CacheBytes = int64(cb)
		g.Waited = r.f64("waited")
		f = g
	case TypeWaiting:
		f = &Waiting{
			SessionID:     r.str("session_id"),
			Position:      int(r.u32("position")),
			QueueLen:      int(r.u32("queue_len")),
			EstimatedWait: r.f64("estimated_wait"),
		}
	case TypeStep:
		f = &Step{SessionID: r.str("session_id"), Position: int(r.u32("position")), Hidden: r.hidden()}
	case TypeResult:
		f = &Result{
			SessionID: r.str("session_id"),
			Position:  int(r.u32("position")),
			Compute:   r.f64("compute"),
			Hidden:    r.hidden(),
		}
	case TypeClose:
		f = &Close{SessionID: r.str("session_id")}
	case TypeClosed:
		f = &Closed{SessionID: r.str("session_id")}
	case TypeError:
		f = &Error{SessionID: r.str("session_id"), Code: Code(r.u16("code")), Message: r.str("message")}
	default:
		return nil, fmt.Errorf("%w: unknown frame type %d", ErrBadFrame, uint8(t))
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d bytes left over after the last field", len(r.b))
	}
	if r.err == nil {
		r.err = f.validate()
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadFrame, t, r.err)
	}
	return f, nil
}

// payloadReader reads fields off a payload; the first error sticks and later
// reads return zero values.
type payloadReader struct {
	b   []byte
	err error
}

// take returns the next n bytes, or nil after recording a truncation error.
func (r *payloadReader) take(field string, n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("payload ends inside %s (needs %d bytes, %d left)", field, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *payloadReader) u8(field string) uint8 {
	if v := r.take(field, 1); v != nil {
		return v[0]
	}
	return 0
}

func (r *payloadReader) u16(field string) uint16 {
	if v := r.take(field, 2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (r *payloadReader) u32(field string) uint32 {
	if v := r.take(field, 4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *payloadReader) u64(field string) uint64 {
	if v := r.take(field, 8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (r *payloadReader) f64(field string) float64 { return math.Float64frombits(r.u64(field)) }

func (r *payloadReader) str(field string) string {
	n := r.u16(field + " length")
	return string(r.take(field, uint64(n)))
}

// hidden reads a tensor, checking its byte size against the payload before
// allocating the float32 data.
func (r *payloadReader) hidden() Hidden {
	h := Hidden{DType: swarm.DType(r.u8("hidden dtype"))}
	h.NTokens = int(r.u32("hidden n_tokens"))
	h.DModel = int(r.u32("hidden d_model"))
	if r.err != nil {
		return Hidden{}
	}
	k := elemBytes(h.DType)
	if k == 0 {
		r.err = checkWireDType(h.DType)
		return Hidden{}
	}
	// Each side is below 2^32 and k <= 4, so the product can pass 2^64:
	// saturate instead of wrapping around.
	elems := uint64(h.NTokens) * uint64(h.DModel)
	size := elems * uint64(k)
	if size/uint64(k) != elems {
		size = math.MaxUint64
	}
	raw := r.take("hidden data", size)
	if r.err != nil {
		r.err = fmt.Errorf("hidden states [%d, %d] %s: %w", h.NTokens, h.DModel, h.DType, r.err)
		return Hidden{}
	}
	h.Data, r.err = DecodeTensor(nil, h.DType, raw)
	return h
}

// EncodedLen is the size of f on the wire, header included, in bytes.
func EncodedLen(f Frame) int { return HeaderLen + payloadLen(f) }
