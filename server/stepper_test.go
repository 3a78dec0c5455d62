package server_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// greedyRun is one session of TestBatchedSessionsMatchSolo: a prompt and the
// number of tokens to generate greedily after it.
type greedyRun struct {
	prompt []int
	gen    int
}

// generated is what a greedy run produced: its tokens and the bits of every
// output hidden state.
type generated struct {
	tokens []int
	bits   []uint32
}

// forwardFunc is a blocks.Forwarder that records the bits of every output
// hidden state.
type forwardFunc struct {
	fw   func(pos int, x []float32, n int) ([]float32, error)
	bits []uint32
}

func (f *forwardFunc) Forward(_ context.Context, pos int, x []float32, n int) ([]float32, error) {
	y, err := f.fw(pos, x, n)
	for _, v := range y {
		f.bits = append(f.bits, math.Float32bits(v))
	}
	return y, err
}

// greedy generates with blocks.Generate and a greedy sampler, fw computing
// the span.
func greedy(h blocks.Head, run greedyRun, fw func(pos int, x []float32, n int) ([]float32, error)) (generated, error) {
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{})
	if err != nil {
		return generated{}, err
	}
	f := &forwardFunc{fw: fw}
	toks, err := blocks.Generate(context.Background(), h, f, run.prompt, run.gen, sampler, func(int, int) error { return nil })
	return generated{tokens: toks, bits: f.bits}, err
}

// TestBatchedSessionsMatchSolo runs 8 sessions with different prompts (one
// longer than a batch, so its prefill is chunked) and generation lengths
// concurrently through one server, whose step loop batches them, and
// requires each session's greedy tokens and every hidden state to equal,
// bit for bit, its run alone on a local engine.
func TestBatchedSessionsMatchSolo(t *testing.T) {
	span := swarm.Span{Start: 0, End: 5}
	m, err := blocks.Open(stories(t))
	require.NoError(t, err)
	engine, err := m.LoadSpan(span)
	require.NoError(t, err)
	defer engine.Close()
	head, err := m.LoadHead()
	require.NoError(t, err)
	m.Close()

	runs := make([]greedyRun, 8)
	for i := range runs {
		prompt := []int{1}
		for k := range 1 + 3*i + (i/7)*90 { // session 7 has a 113-token prompt
			prompt = append(prompt, 30+(k*17+i*31)%400)
		}
		runs[i] = greedyRun{prompt: prompt, gen: 6 + 5*(i%3)}
	}
	const maxLength = 160
	want := make([]generated, len(runs))
	for i, run := range runs {
		es, err := engine.NewSession(span, maxLength)
		require.NoError(t, err)
		want[i], err = greedy(head, run, func(pos int, x []float32, n int) ([]float32, error) {
			return es.Forward(context.Background(), pos, x, n)
		})
		require.NoError(t, err)
		require.NotEmpty(t, want[i].tokens, "session %d generates", i)
		require.NoError(t, es.Close())
	}

	s := serve(t, newServer(t, span, nil))
	got := make([]generated, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, run := range runs {
		wg.Go(func() { got[i], errs[i] = remoteGreedy(s.wsURL(), head, span, maxLength, run) })
	}
	wg.Wait()
	for i := range runs {
		require.NoError(t, errs[i], "session %d", i)
		require.Equal(t, want[i].tokens, got[i].tokens, "session %d tokens", i)
		require.Equal(t, want[i].bits, got[i].bits, "session %d hidden states", i)
	}
}

// remoteGreedy runs one greedy generation through the server at url, on its
// own connection.
func remoteGreedy(url string, head blocks.Head, span swarm.Span, maxLength int, run greedyRun) (generated, error) {
	ws, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return generated{}, err
	}
	resp.Body.Close()
	fc := api.NewWebsocket(ws, 0)
	defer fc.Close()
	o := openMsg(span, maxLength)
	if err := fc.WriteFrame(&o); err != nil {
		return generated{}, err
	}
	f, err := fc.ReadFrame()
	if err != nil {
		return generated{}, err
	}
	g, ok := f.(*wire.Granted)
	if !ok {
		return generated{}, fmt.Errorf("got %T, want Granted", f)
	}
	return greedy(head, run, func(pos int, x []float32, n int) ([]float32, error) {
		err := fc.WriteFrame(&wire.Step{SessionID: g.SessionID, Position: pos, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: n, DModel: len(x) / n, Data: x}})
		if err != nil {
			return nil, err
		}
		f, err := fc.ReadFrame()
		if err != nil {
			return nil, err
		}
		r, ok := f.(*wire.Result)
		if !ok {
			return nil, fmt.Errorf("got %T %+v, want Result", f, f)
		}
		return r.Hidden.Data, nil
	})
}
