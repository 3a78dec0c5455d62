package api

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/swarmllm/swarm/swarm/wire"
)

// DefaultWriteTimeout bounds one WriteFrame on a websocket: a peer that does
// not read for this long is treated as gone.
const DefaultWriteTimeout = 30 * time.Second

// wsConn is a FrameConn over a websocket: one frame per binary message.
type wsConn struct {
	ws           *websocket.Conn
	maxPayload   int
	writeTimeout time.Duration

	wmu sync.Mutex // serializes writers (gorilla allows one at a time)

	closeOnce sync.Once
	closeErr  error
}

// NewWebsocket wraps an established websocket. Frames whose payload exceeds
// maxPayload bytes (wire.DefaultMaxPayload when <= 0) are rejected from
// their header, before their payload is read; text messages, empty messages
// and messages holding more than one frame are malformed.
func NewWebsocket(ws *websocket.Conn, maxPayload int) FrameConn {
	if maxPayload <= 0 {
		maxPayload = wire.DefaultMaxPayload
	}
	return &wsConn{ws: ws, maxPayload: maxPayload, writeTimeout: DefaultWriteTimeout}
}

// ReadFrame implements FrameConn. It decodes the frame straight from the
// message reader, so an oversized payload is refused from the 12-byte
// header without being buffered.
func (c *wsConn) ReadFrame() (wire.Frame, error) {
	mt, r, err := c.ws.NextReader()
	if err != nil {
		return nil, c.readError(err)
	}
	if mt != websocket.BinaryMessage {
		return nil, fmt.Errorf("%w: websocket text message, want one binary frame per message", wire.ErrBadFrame)
	}
	f, err := wire.Decode(r, c.maxPayload)
	switch {
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: empty websocket message", wire.ErrBadFrame)
	case err != nil && (errors.Is(err, wire.ErrBadFrame) || errors.Is(err, wire.ErrVersion)):
		return nil, err
	case err != nil:
		return nil, c.readError(err)
	}
	var extra [1]byte
	if n, _ := io.ReadFull(r, extra[:]); n > 0 {
		return nil, fmt.Errorf("%w: %s frame followed by more bytes in the same websocket message (want one frame per message)", wire.ErrBadFrame, f.Type())
	}
	return f, nil
}

// readError maps the end of the websocket to ErrClosed.
func (c *wsConn) readError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return fmt.Errorf("%w: read: %w", ErrClosed, err)
}

// WriteFrame implements FrameConn.
func (c *wsConn) WriteFrame(f wire.Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	w, err := c.ws.NextWriter(websocket.BinaryMessage)
	if err != nil {
		return fmt.Errorf("%w: write %s frame: %w", ErrClosed, typeOf(f), err)
	}
	if err := wire.Encode(w, f); err != nil {
		w.Close()
		if errors.Is(err, wire.ErrBadFrame) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%w: write %s frame: %w", ErrClosed, typeOf(f), err)
	}
	return nil
}

// Close implements FrameConn: it closes the TCP connection (after a
// best-effort websocket close message), which unblocks ReadFrame.
func (c *wsConn) Close() error {
	c.closeOnce.Do(func() {
		msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(100*time.Millisecond))
		c.closeErr = c.ws.Close()
	})
	return c.closeErr
}

// RemoteAddr implements FrameConn.
func (c *wsConn) RemoteAddr() string { return c.ws.RemoteAddr().String() }

// typeOf names a frame's type, "nil" for nil.
func typeOf(f wire.Frame) string {
	if f == nil {
		return "nil"
	}
	return f.Type().String()
}
