package api

import (
	"errors"

	"github.com/swarmllm/swarm/swarm/wire"
)

// ErrClosed is returned (wrapped) by ReadFrame and WriteFrame once the
// connection is closed, by either side.
var ErrClosed = errors.New("api: connection closed")

// FrameConn carries swarm/wire frames between a client and a server.
//
// One goroutine may call ReadFrame while others call WriteFrame; WriteFrame
// is safe for concurrent use (frames never interleave). Close may be called
// at any time from any goroutine, more than once; it unblocks a pending
// ReadFrame.
type FrameConn interface {
	// ReadFrame returns the next frame. A malformed, oversized or
	// unknown-version frame gives an error wrapping wire.ErrBadFrame or
	// wire.ErrVersion (answer it with an Error frame, wire.CodeOf, and
	// close); the end of the connection gives an error wrapping ErrClosed.
	ReadFrame() (wire.Frame, error)
	// WriteFrame sends one frame. It returns an error wrapping
	// wire.ErrBadFrame for a frame that cannot be encoded (nothing is sent
	// then) or the transport's error.
	WriteFrame(f wire.Frame) error
	// Close closes the connection.
	Close() error
	// RemoteAddr names the peer, for logs.
	RemoteAddr() string
}
