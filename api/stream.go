package api

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/swarmllm/swarm/swarm/wire"
)

// streamConn is a FrameConn over a reliable byte stream: frames back to
// back, each a 12-byte header and its payload (wire.Encode/Decode).
type streamConn struct {
	rwc        io.ReadWriteCloser
	src        *readRecorder // rwc's reads, with their last error
	r          *bufio.Reader
	maxPayload int
	remote     string

	wmu sync.Mutex // serializes writers

	closeOnce sync.Once
	closeErr  error
}

// NewStream wraps a reliable byte stream, e.g. a libp2p stream or a
// net.Conn. Frames whose payload exceeds maxPayload bytes
// (wire.DefaultMaxPayload when <= 0) are refused from their header. remote
// names the peer in logs.
func NewStream(rwc io.ReadWriteCloser, maxPayload int, remote string) FrameConn {
	if maxPayload <= 0 {
		maxPayload = wire.DefaultMaxPayload
	}
	src := &readRecorder{r: rwc}
	return &streamConn{rwc: rwc, src: src, r: bufio.NewReader(src), maxPayload: maxPayload, remote: remote}
}

// readRecorder passes reads through and keeps the last error.
type readRecorder struct {
	r   io.Reader
	err error // read by ReadFrame's goroutine only, like r
}

func (rr *readRecorder) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err != nil {
		rr.err = err
	}
	return n, err
}

// ReadFrame implements FrameConn. After a malformed frame the stream
// position is unknown: close the connection. A stream that ends or breaks
// (e.g. a libp2p stream reset) inside a frame is the end of the
// connection, ErrClosed, not a malformed frame: the peer never sent a bad
// frame, the transport lost the rest of a good one.
func (c *streamConn) ReadFrame() (wire.Frame, error) {
	f, err := wire.Decode(c.r, c.maxPayload)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, wire.ErrBadFrame) && errors.Is(err, io.ErrUnexpectedEOF) && c.src.err != nil:
		return nil, fmt.Errorf("%w: the stream ended inside a frame: %w", ErrClosed, c.src.err)
	case errors.Is(err, wire.ErrBadFrame) || errors.Is(err, wire.ErrVersion):
		return nil, err
	}
	return nil, fmt.Errorf("%w: %w", ErrClosed, err)
}

// WriteFrame implements FrameConn; wire.Encode writes each frame with one
// Write call.
func (c *streamConn) WriteFrame(f wire.Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := wire.Encode(c.rwc, f); err != nil {
		if errors.Is(err, wire.ErrBadFrame) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return nil
}

// Close implements FrameConn.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.rwc.Close() })
	return c.closeErr
}

// RemoteAddr implements FrameConn.
func (c *streamConn) RemoteAddr() string { return c.remote }

// Pipe returns the two ends of an in-memory, synchronous FrameConn
// (net.Pipe under NewStream): what one end writes the other reads, with no
// buffering, sockets or timeouts. It is the data plane's in-memory twin for
// tests (hashicorp/raft's InmemTransport plays the same part), and it runs
// inside testing/synctest bubbles. Frames over maxPayload bytes
// (wire.DefaultMaxPayload when <= 0) are refused from their header.
func Pipe(maxPayload int, clientName, serverName string) (clientEnd, serverEnd FrameConn) {
	c, s := net.Pipe()
	return NewStream(c, maxPayload, serverName), NewStream(s, maxPayload, clientName)
}
