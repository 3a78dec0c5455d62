package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/swarmllm/swarm/swarm"
)

// HeaderLen is the size of the fixed frame header, in bytes.
const HeaderLen = 12

// Magic is the first four bytes of every frame.
const Magic = "SWRM"

// DefaultMaxPayload is the payload limit, in bytes, that Decode and Unmarshal
// apply when given maxPayload <= 0: 64 MiB, room for a [4096, 4096] f32 step.
const DefaultMaxPayload = 64 << 20

// Encode writes f to w as one frame with a single Write call (so that a
// message-oriented writer receives exactly one frame). It returns an error
// wrapping ErrBadFrame if f is invalid (nothing is written then), or the
// writer's error.
func Encode(w io.Writer, f Frame) error {
	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBuf {
			bufPool.Put(bp)
		}
	}()
	b, err := AppendFrame((*bp)[:0], f)
	*bp = b
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("wire: write %s frame: %w", f.Type(), err)
	}
	return nil
}

// bufPool holds encode buffers; buffers above maxPooledBuf are dropped.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBuf = 16 << 20

// Marshal returns f as one frame (header and payload), for a websocket
// binary message. It returns an error wrapping ErrBadFrame if f is invalid.
func Marshal(f Frame) ([]byte, error) { return AppendFrame(nil, f) }

// AppendFrame appends f as one frame to dst and returns the extended slice.
// It returns dst unchanged and an error wrapping ErrBadFrame if f is nil or
// invalid (an empty session id where one is required, a bad tensor shape, a
// NaN time, ...).
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if f == nil {
		return dst, fmt.Errorf("%w: nil frame", ErrBadFrame)
	}
	if err := f.validate(); err != nil {
		return dst, fmt.Errorf("%w: %s: %w", ErrBadFrame, f.Type(), err)
	}
	n := payloadLen(f)
	if int64(n) > math.MaxUint32 {
		return dst, fmt.Errorf("%w: %s payload of %d bytes exceeds the 2^32-1 limit", ErrBadFrame, f.Type(), n)
	}
	off := len(dst)
	dst = slices.Grow(dst, HeaderLen+n)
	dst = append(dst, Magic...)
	dst = binary.LittleEndian.AppendUint16(dst, swarm.ProtocolVersion)
	dst = append(dst, byte(f.Type()), 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst, err := appendPayload(dst, f)
	if err != nil {
		return dst[:off], fmt.Errorf("%w: %s: %w", ErrBadFrame, f.Type(), err)
	}
	if got := len(dst) - off - HeaderLen; got != n {
		return dst[:off], fmt.Errorf("wire: internal error: %s payload is %d bytes, computed %d", f.Type(), got, n)
	}
	return dst, nil
}

// Decode reads one frame from r. It reads the header first and rejects a
// payload longer than maxPayload bytes (DefaultMaxPayload when maxPayload <=
// 0) before allocating anything for it.
//
// Errors: io.EOF if r ends cleanly before a frame starts; a *VersionError
// (errors.Is ErrVersion) for another protocol version; an error wrapping
// ErrTooLarge and ErrBadFrame for an oversized payload; an error wrapping
// ErrBadFrame for a malformed or truncated frame; r's own error, wrapped,
// otherwise. After any error the stream position is unspecified.
func Decode(r io.Reader, maxPayload int) (Frame, error) {
	var hdr [HeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		switch {
		case err == io.EOF:
			return nil, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%w: stream ends inside the %d-byte header: %w", ErrBadFrame, HeaderLen, err)
		}
		return nil, fmt.Errorf("wire: read frame header: %w", err)
	}
	t, n, err := parseHeader(hdr[:], maxPayload)
	if err != nil {
		return nil, err
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %s: stream ends inside the %d-byte payload: %w", ErrBadFrame, t, n, io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("wire: read %s payload: %w", t, err)
	}
	return parsePayload(t, payload)
}

// Unmarshal decodes b, which must hold exactly one frame (a websocket binary
// message). Its errors are those of Decode; extra or missing bytes after the
// header are ErrBadFrame.
func Unmarshal(b []byte, maxPayload int) (Frame, error) {
	if len(b) < HeaderLen {
		return nil, fmt.Errorf("%w: message of %d bytes is shorter than the %d-byte header", ErrBadFrame, len(b), HeaderLen)
	}
	t, n, err := parseHeader(b[:HeaderLen], maxPayload)
	if err != nil {
		return nil, err
	}
	if got := len(b) - HeaderLen; got != n {
		return nil, fmt.Errorf("%w: %s: header says %d payload bytes, message has %d", ErrBadFrame, t, n, got)
	}
	return parsePayload(t, b[HeaderLen:])
}

// parseHeader checks a HeaderLen-byte header and returns the frame type and
// payload length.
func parseHeader(h []byte, maxPayload int) (Type, int, error) {
	if string(h[0:4]) != Magic {
		return 0, 0, fmt.Errorf("%w: magic % x, want %q (% x)", ErrBadFrame, h[0:4], Magic, Magic)
	}
	if v := binary.LittleEndian.Uint16(h[4:6]); v != swarm.ProtocolVersion {
		return 0, 0, &VersionError{Got: v, Want: swarm.ProtocolVersion}
	}
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	t := Type(h[6])
	n := binary.LittleEndian.Uint32(h[8:12])
	if uint64(n) > uint64(maxPayload) {
		return 0, 0, fmt.Errorf("%w: %s payload of %d bytes exceeds the limit of %d", ErrTooLarge, t, n, maxPayload)
	}
	if t == TypeInvalid || t >= typeEnd {
		return 0, 0, fmt.Errorf("%w: unknown frame type %d (want %d..%d)", ErrBadFrame, uint8(t), TypeOpen, typeEnd-1)
	}
	if h[7] != 0 {
		return 0, 0, fmt.Errorf("%w: %s: flags %#02x, want 0 (reserved in version %d)", ErrBadFrame, t, h[7], swarm.ProtocolVersion)
	}
	return t, int(n), nil
}

// MaxStepPayload is the largest Step or Result payload, in bytes, for hidden
// states of up to nTokens x dModel in any wire dtype with a session id of up
// to MaxNameLen bytes: a receiver's natural maxPayload for a model of hidden
// size dModel and sessions of at most nTokens tokens per step.
func MaxStepPayload(nTokens, dModel int) int {
	return strPrefix + MaxNameLen + 4 + 8 + tensorPrefix + 4*nTokens*dModel
}
