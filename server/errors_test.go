package server_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// TestRequestErrors checks the Error frame (code and message) for each
// kind of bad request; the connection stays usable after each.
func TestRequestErrors(t *testing.T) {
	s := serve(t, newServer(t, swarm.Span{Start: 1, End: 3}, nil))
	p := s.dial(t)
	sid := p.open(openMsg(swarm.Span{Start: 1, End: 3}, 8))
	step := func(pos, n, d int, dt swarm.DType) *wire.Step {
		return &wire.Step{SessionID: sid, Position: pos, Hidden: wire.Hidden{DType: dt, NTokens: n, DModel: d, Data: make([]float32, n*d)}}
	}
	open := func(model string, span swarm.Span, maxLength int) *wire.Open {
		return &wire.Open{Model: model, Span: span, MaxLength: maxLength, DType: swarm.DTypeF32}
	}
	tests := []struct {
		name string
		send wire.Frame
		code wire.Code
		want string
	}{
		{"wrong model", open("llama", swarm.Span{Start: 1, End: 3}, 8), wire.CodeWrongModel, `hosts "stories260K", not "llama"`},
		{"span outside", open("stories260K", swarm.Span{Start: 0, End: 2}, 8), wire.CodeBadSpan, "span 0:2 is not inside the hosted span 1:3"},
		{"too long", open("stories260K", swarm.Span{Start: 1, End: 3}, 513), wire.CodeBadPosition, "max_length 513 exceeds the model's context of 512"},
		{"unknown session step", &wire.Step{SessionID: "nope", Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 64, Data: make([]float32, 64)}},
			wire.CodeUnknownSession, `no open session "nope"`},
		{"unknown session close", &wire.Close{SessionID: "nope"}, wire.CodeUnknownSession, `no open session "nope"`},
		{"wrong dtype", step(0, 1, 64, swarm.DTypeF16), wire.CodeBadDType, "step in f16, the session was opened with f32"},
		{"wrong d_model", step(0, 1, 32, swarm.DTypeF32), wire.CodeBadShape, "hidden states [1, 32], want [n, 64]"},
		{"gap", step(3, 1, 64, swarm.DTypeF32), wire.CodeBadPosition, "position 3, the caches hold 0"},
		{"NaN", &wire.Step{SessionID: sid, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 2, DModel: 64, Data: nonFinite(2*64, 64+5)}},
			wire.CodeBadValue, "value NaN at token 1, column 5"},
		{"past max length", step(0, 9, 64, swarm.DTypeF32), wire.CodeBadPosition, "past the session's max length 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(tt.send)
			e := expect[*wire.Error](p)
			require.Equal(t, tt.code, e.Code, e.Message)
			require.Contains(t, e.Message, tt.want)
		})
	}
	p.send(step(0, 1, 64, swarm.DTypeF32))
	require.Equal(t, sid, expect[*wire.Result](p).SessionID, "the session still works")
	require.Equal(t, int64(1), s.srv.Info().NonFiniteSteps, "the NaN step is counted")
}

// nonFinite returns n zeros with a NaN at index at.
func nonFinite(n, at int) []float32 {
	x := make([]float32, n)
	x[at] = float32(math.NaN())
	return x
}

// TestMalformedFrames: each malformed or oversized message gets an Error
// frame with the code of wire.CodeOf and the connection is closed; the
// server keeps serving new connections.
func TestMalformedFrames(t *testing.T) {
	s := serve(t, newServer(t, swarm.Span{Start: 0, End: 2}, nil))
	valid, err := wire.Marshal(&wire.Close{SessionID: "x"})
	require.NoError(t, err)
	oversized := append([]byte(nil), valid[:wire.HeaderLen]...)
	oversized[8], oversized[9], oversized[10], oversized[11] = 0xff, 0xff, 0xff, 0x7f
	version := append([]byte(nil), valid...)
	version[4] = 9
	tests := []struct {
		name    string
		msgType int
		msg     []byte
		code    wire.Code
		want    string
	}{
		{"garbage", websocket.BinaryMessage, []byte("hello, server"), wire.CodeBadFrame, "magic"},
		{"text message", websocket.TextMessage, valid, wire.CodeBadFrame, "text message"},
		{"empty message", websocket.BinaryMessage, nil, wire.CodeBadFrame, "empty websocket message"},
		{"two frames in one message", websocket.BinaryMessage, append(append([]byte(nil), valid...), valid...), wire.CodeBadFrame, "one frame per message"},
		{"oversized", websocket.BinaryMessage, oversized, wire.CodeBadFrame, "exceeds the limit"},
		{"truncated", websocket.BinaryMessage, valid[:len(valid)-1], wire.CodeBadFrame, "payload"},
		{"unknown version", websocket.BinaryMessage, version, wire.CodeUnsupportedVersion, "version 9"},
		{"server frame from a client", websocket.BinaryMessage, mustMarshal(t, &wire.Closed{SessionID: "x"}), wire.CodeBadFrame, "not Closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, resp, err := websocket.DefaultDialer.Dial(s.wsURL(), nil)
			require.NoError(t, err)
			resp.Body.Close()
			defer ws.Close()
			require.NoError(t, ws.WriteMessage(tt.msgType, tt.msg))
			mt, b, err := ws.ReadMessage()
			require.NoError(t, err)
			require.Equal(t, websocket.BinaryMessage, mt)
			f, err := wire.Unmarshal(b, 0)
			require.NoError(t, err)
			e, ok := f.(*wire.Error)
			require.True(t, ok, "got %T", f)
			require.Equal(t, tt.code, e.Code)
			require.Contains(t, e.Message, tt.want)
			_, _, err = ws.ReadMessage()
			require.Error(t, err, "the server closes the connection")

			// The server still serves.
			p := s.dial(t)
			p.open(openMsg(swarm.Span{Start: 0, End: 2}, 4))
		})
	}
}

func mustMarshal(t *testing.T, f wire.Frame) []byte {
	b, err := wire.Marshal(f)
	require.NoError(t, err)
	return b
}

// TestEmulateLatency checks that replies come no earlier than the emulated
// latency after the request (a lower bound only).
func TestEmulateLatency(t *testing.T) {
	const latency = 50 * time.Millisecond
	s := serve(t, newServer(t, swarm.Span{Start: 0, End: 2}, func(c *server.Config) { c.EmulateLatency = latency }))
	p := s.dial(t)
	start := time.Now()
	sid := p.open(openMsg(swarm.Span{Start: 0, End: 2}, 4))
	require.GreaterOrEqual(t, time.Since(start), latency)
	start = time.Now()
	p.send(&wire.Step{SessionID: sid, Position: 0, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 64, Data: hidden(1, 0)}})
	expect[*wire.Result](p)
	require.GreaterOrEqual(t, time.Since(start), latency)
	start = time.Now()
	resp, err := http.Get(s.hs.URL + api.InfoPath)
	require.NoError(t, err)
	resp.Body.Close()
	require.GreaterOrEqual(t, time.Since(start), latency, "/v1/info too")
}
