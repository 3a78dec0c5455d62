package client_test

import (
	"context"
	"sync"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm/wire"
)

// staller dials websockets like the default dialer and can make every
// connection to one server stall: frames from it are no longer delivered,
// as when the server hangs or the network path goes dark (a transport hook
// in the spirit of raft's fuzzy transport; the server itself is real).
type staller struct {
	target  string
	stalled chan struct{}
	once    sync.Once
}

func newStaller(target string) *staller {
	return &staller{target: target, stalled: make(chan struct{})}
}

func (s *staller) stall() { s.once.Do(func() { close(s.stalled) }) }

func (s *staller) dial(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
	fc, err := client.DialWebsocket(ctx, ep, maxPayload)
	if err != nil || ep.Inference != s.target {
		return fc, err
	}
	return &stallConn{FrameConn: fc, stalled: s.stalled, closed: make(chan struct{})}, nil
}

// stallConn withholds frames once stalled, until closed.
type stallConn struct {
	api.FrameConn
	stalled   chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *stallConn) ReadFrame() (wire.Frame, error) {
	f, err := c.FrameConn.ReadFrame()
	select {
	case <-c.stalled:
		<-c.closed
		return nil, api.ErrClosed
	default:
		return f, err
	}
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.FrameConn.Close()
}
