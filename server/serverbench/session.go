package serverbench

import (
	"context"
	"fmt"

	"github.com/gorilla/websocket"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// bench is the server under test, as a client sees it.
type bench struct {
	url  string // ws://HOST:PORT
	info swarm.ModelInfo
	span swarm.Span
}

// hidden makes deterministic hidden states [n, DModel] of modest size, the
// same for the same seed.
func (b bench) hidden(n, seed int) []float32 {
	x := make([]float32, n*b.info.DModel)
	for i := range x {
		x[i] = float32((i*7+seed*13)%23-11) / 16
	}
	return x
}

// session is one open session on its own connection.
type session struct {
	fc  api.FrameConn
	id  string
	dim int
}

// open connects and opens a session over the whole span for maxLength
// positions, waiting for admission.
func (b bench) open(ctx context.Context, maxLength int) (*session, error) {
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, b.url+api.InferencePath, nil)
	if err != nil {
		return nil, fmt.Errorf("serverbench: dial %s: %w", b.url, err)
	}
	resp.Body.Close()
	s := &session{fc: api.NewWebsocket(ws, 0), dim: b.info.DModel}
	err = s.fc.WriteFrame(&wire.Open{Model: b.info.Name, Span: b.span, MaxLength: maxLength, DType: swarm.DTypeF32, AllocTimeout: 600})
	for err == nil {
		var f wire.Frame
		if f, err = s.read(); err != nil {
			break
		}
		if g, ok := f.(*wire.Granted); ok {
			s.id = g.SessionID
			return s, nil
		}
	}
	s.fc.Close()
	return nil, err
}

// read returns the next frame, turning an Error frame into an error.
func (s *session) read() (wire.Frame, error) {
	f, err := s.fc.ReadFrame()
	if err != nil {
		return nil, fmt.Errorf("serverbench: read: %w", err)
	}
	if e, ok := f.(*wire.Error); ok {
		return nil, fmt.Errorf("serverbench: server error %v: %s", e.Code, e.Message)
	}
	return f, nil
}

// step runs hidden states x at positions pos.. and returns the output.
func (s *session) step(pos int, x []float32) ([]float32, error) {
	n := len(x) / s.dim
	err := s.fc.WriteFrame(&wire.Step{SessionID: s.id, Position: pos, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: n, DModel: s.dim, Data: x}})
	if err != nil {
		return nil, fmt.Errorf("serverbench: write: %w", err)
	}
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	r, ok := f.(*wire.Result)
	if !ok {
		return nil, fmt.Errorf("serverbench: got %s, want Result", f.Type())
	}
	return r.Hidden.Data, nil
}

// close ends the connection (the server releases the session).
func (s *session) close() { s.fc.Close() }
