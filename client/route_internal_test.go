package client

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server/api"
	"github.com/swarmllm/swarm/swarm"
)

// testModel is shaped like stories260K: 5 blocks, s_m = 181760 bytes, 256
// cache bytes per block per token.
var testModel = swarm.ModelInfo{Name: "m", NBlocks: 5, DModel: 64, BlockBytes: 181760, CacheBytesPerToken: 256, MaxSeqLen: 512}

// cand builds a usable candidate hosting span with decode time tau per
// block and RTT rtt, with room for many sessions.
func cand(name string, span swarm.Span, tau float64, rtt time.Duration) Candidate {
	return Candidate{
		Endpoint: api.Endpoint{Inference: "ws://" + name + "/v1/inference", Info: "http://" + name + "/v1/info"},
		Info: api.Info{
			ServerInfo: swarm.ServerInfo{ID: name, Model: "m", Span: span, Tau: tau, MemoryBytes: 1 << 30},
			ModelInfo:  testModel, State: api.StateServing, MaxLength: 512,
		},
		RTT: rtt,
	}
}

// TestRouteWSRR checks that route picks the chain of least WS-RR cost
// (eq. 4 link costs plus eq. 20 waits) and maps Lemma 3.1 sub-spans back to
// block numbers when only part of the model is needed.
func TestRouteWSRR(t *testing.T) {
	ms := time.Millisecond
	span := func(a, b int) swarm.Span { return swarm.Span{Start: a, End: b} }
	tests := []struct {
		name  string
		cands []Candidate
		need  swarm.Span
		want  []string // "name a:b" per hop
	}{
		{
			name:  "one fast hop beats two",
			cands: []Candidate{cand("a", span(0, 5), 1e-4, ms), cand("b", span(0, 2), 1e-4, ms), cand("c", span(2, 5), 1e-4, ms)},
			need:  span(0, 5), want: []string{"a 0:5"},
		},
		{
			// a: 1 hop, 20ms + 5*0.1ms = 20.5ms per token; b, c: 2 * 1ms + 0.5ms.
			name:  "slow link avoided",
			cands: []Candidate{cand("a", span(0, 5), 1e-4, 20*ms), cand("b", span(0, 2), 1e-4, ms), cand("c", span(2, 5), 1e-4, ms)},
			need:  span(0, 5), want: []string{"b 0:2", "c 2:5"},
		},
		{
			// The second hop starts inside the first: Lemma 3.1 lets c
			// process only blocks 3 and 4.
			name:  "overlapping spans",
			cands: []Candidate{cand("a", span(0, 3), 1e-4, ms), cand("c", span(1, 5), 1e-4, ms)},
			need:  span(0, 5), want: []string{"a 0:3", "c 3:5"},
		},
		{
			// A failover needing blocks 3..4: a server hosting 2..5 processes 3:5.
			name:  "sub-span starting earlier",
			cands: []Candidate{cand("x", span(2, 5), 1e-4, ms), cand("y", span(0, 5), 1e-4, 10*ms)},
			need:  span(3, 5), want: []string{"x 3:5"},
		},
		{
			// Needing block 3 only: a server hosting 2..5 processes 3:4.
			name:  "sub-span ending later",
			cands: []Candidate{cand("x", span(2, 5), 1e-4, ms)},
			need:  span(3, 4), want: []string{"x 3:4"},
		},
		{
			name:  "split over two",
			cands: []Candidate{cand("x", span(3, 4), 1e-4, ms), cand("y", span(4, 5), 1e-4, ms)},
			need:  span(3, 5), want: []string{"x 3:4", "y 4:5"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hops, err := route(testModel, tt.cands, nil, tt.need, 100)
			require.NoError(t, err)
			var got []string
			for _, h := range hops {
				got = append(got, h.cand.Info.ID+" "+h.span.String())
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRouteWaiting checks that a server whose cache is full is avoided when
// another chain exists (eq. 20 wait > 0) and that a server whose memory can
// never hold the session is unusable.
func TestRouteWaiting(t *testing.T) {
	full := cand("full", swarm.Span{Start: 0, End: 5}, 1e-5, time.Millisecond)
	// Room for exactly one session of 100 tokens over 5 blocks, held by a
	// session with 30 s left.
	full.Info.MemoryBytes = 5*testModel.BlockBytes + 5*testModel.CacheBytes(100)
	full.Info.Sessions = []swarm.SessionLoad{{Remaining: 30, Caches: 5}}
	free := cand("free", swarm.Span{Start: 0, End: 5}, 1e-4, 2*time.Millisecond)
	hops, err := route(testModel, []Candidate{full, free}, nil, testModel.Blocks(), 100)
	require.NoError(t, err)
	require.Len(t, hops, 1)
	require.Equal(t, "free", hops[0].cand.Info.ID)

	tiny := cand("tiny", swarm.Span{Start: 0, End: 5}, 1e-5, time.Millisecond)
	tiny.Info.MemoryBytes = 5*testModel.BlockBytes + 10
	_, err = route(testModel, []Candidate{tiny}, nil, testModel.Blocks(), 100)
	require.ErrorIs(t, err, ErrNoChain)
	var nc *NoChainError
	require.ErrorAs(t, err, &nc)
	require.Empty(t, nc.Uncovered)
	require.NotNil(t, nc.Routing)
}

// TestRouteNoChain checks the uncovered blocks and the reasons in the error.
func TestRouteNoChain(t *testing.T) {
	a := cand("a", swarm.Span{Start: 0, End: 2}, 1e-4, time.Millisecond)
	b := cand("b", swarm.Span{Start: 4, End: 5}, 1e-4, time.Millisecond)
	down := Candidate{Endpoint: api.Endpoint{Inference: "ws://down/v1/inference"}, Err: errors.New("connection refused")}
	failed := cand("c", swarm.Span{Start: 2, End: 4}, 1e-4, time.Millisecond)
	short := cand("s", swarm.Span{Start: 2, End: 4}, 1e-4, time.Millisecond)
	short.Info.MaxLength = 64
	excluded := map[string]error{failed.Endpoint.Inference: errors.New("step timed out")}
	_, err := route(testModel, []Candidate{a, b, down, failed, short}, excluded, testModel.Blocks(), 100)
	var nc *NoChainError
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []swarm.Span{{Start: 2, End: 4}}, nc.Uncovered)
	require.Equal(t, "client: no chain of servers covers blocks 0:5: no usable server hosts blocks 2:4 (left out: "+
		"ws://s/v1/inference: sessions of at most 64 tokens, this one needs 100; "+
		"ws://down/v1/inference: connection refused; ws://c/v1/inference: failed earlier: step timed out)", err.Error())

	_, err = route(testModel, []Candidate{b}, nil, testModel.Blocks(), 100)
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []swarm.Span{{Start: 0, End: 4}}, nc.Uncovered)
	_, err = route(testModel, nil, nil, swarm.Span{Start: 3, End: 5}, 100)
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []swarm.Span{{Start: 3, End: 5}}, nc.Uncovered)
}

// TestSameModel checks the fields a server's model must share with the
// client's, and those that may differ.
func TestSameModel(t *testing.T) {
	require.NoError(t, sameModel(testModel, testModel))
	other := testModel
	other.MaxSeqLen, other.TiedEmbeddings, other.DType = 2048, true, swarm.DTypeF16
	require.NoError(t, sameModel(testModel, other), "context, head storage and dtype may differ")
	for name, change := range map[string]func(*swarm.ModelInfo){
		"name":       func(m *swarm.ModelInfo) { m.Name = "n" },
		"d_model":    func(m *swarm.ModelInfo) { m.DModel = 32 },
		"n_blocks":   func(m *swarm.ModelInfo) { m.NBlocks = 6 },
		"rope_theta": func(m *swarm.ModelInfo) { m.RopeTheta = 5e5 },
		"norm_eps":   func(m *swarm.ModelInfo) { m.NormEps = 1e-6 },
	} {
		m := testModel
		change(&m)
		err := sameModel(testModel, m)
		require.ErrorIs(t, err, ErrModelMismatch, name)
		require.ErrorContains(t, err, "server's "+name, name)
	}
}
