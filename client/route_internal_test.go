package client

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
)

// testModel is shaped like stories260K: 5 blocks, s_m = 181760 bytes, 256
// cache bytes per block per token.
var testModel = swarm.ModelInfo{Name: "m", Arch: "llama", NBlocks: 5, DModel: 64, BlockBytes: 181760, CacheBytesPerToken: 256, MaxSeqLen: 512}

// cand builds a usable candidate hosting span with decode time tau per
// block and RTT rtt, with room for many sessions.
func cand(name string, span swarm.Span, tau float64, rtt time.Duration) Candidate {
	model := testModel
	return Candidate{
		Endpoint: api.Endpoint{Inference: "ws://" + name + "/v1/inference", Info: "http://" + name + "/v1/info"},
		Info: api.Info{
			ServerInfo: swarm.ServerInfo{ID: name, Model: "m", Span: span, Tau: tau, MemoryBytes: 1 << 30,
				CacheBytesCapacity: 1<<30 - int64(span.Len())*testModel.BlockBytes, CacheBytesPerToken: testModel.CacheBytesPerToken},
			ModelInfo: &model, State: api.StateServing, MaxLength: 512,
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
			plan, err := Route(RouteRequest{Model: testModel, Need: tt.need, MaxLength: 100}, tt.cands)
			require.NoError(t, err)
			var got []string
			for _, h := range plan.Hops {
				got = append(got, h.Candidate.Info.ID+" "+h.Span.String())
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
	full.Info.CacheBytesCapacity = 5 * testModel.CacheBytes(100)
	full.Info.Sessions = []swarm.SessionLoad{{Remaining: 30, Caches: 5}}
	free := cand("free", swarm.Span{Start: 0, End: 5}, 1e-4, 2*time.Millisecond)
	plan, err := Route(RouteRequest{Model: testModel, Need: testModel.Blocks(), MaxLength: 100}, []Candidate{full, free})
	require.NoError(t, err)
	require.Len(t, plan.Hops, 1)
	require.Equal(t, "free", plan.Hops[0].Candidate.Info.ID)

	tiny := cand("tiny", swarm.Span{Start: 0, End: 5}, 1e-5, time.Millisecond)
	tiny.Info.CacheBytesCapacity = 10
	_, err = Route(RouteRequest{Model: testModel, Need: testModel.Blocks(), MaxLength: 100}, []Candidate{tiny})
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
	_, err := Route(RouteRequest{Model: testModel, Need: testModel.Blocks(), MaxLength: 100, Exclude: excluded}, []Candidate{a, b, down, failed, short})
	var nc *NoChainError
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []swarm.Span{{Start: 2, End: 4}}, nc.Uncovered)
	require.Equal(t, "client: no chain of servers covers blocks 0:5: no usable server hosts blocks 2:4 (left out: "+
		"ws://down/v1/inference: connection refused; ws://c/v1/inference: failed earlier: step timed out; "+
		"ws://s/v1/inference: sessions of at most 64 tokens, this one needs 100)", err.Error())

	_, err = Route(RouteRequest{Model: testModel, Need: testModel.Blocks(), MaxLength: 100}, []Candidate{b})
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []swarm.Span{{Start: 0, End: 4}}, nc.Uncovered)
	_, err = Route(RouteRequest{Model: testModel, Need: swarm.Span{Start: 3, End: 5}, MaxLength: 100}, nil)
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
	mistral := testModel
	mistral.Arch = "mistral"
	require.NoError(t, sameModel(testModel, mistral), "llama.cpp writes Mistral GGUFs as llama: the same computation")
	for name, change := range map[string]func(*swarm.ModelInfo){
		"name":       func(m *swarm.ModelInfo) { m.Name = "n" },
		"d_model":    func(m *swarm.ModelInfo) { m.DModel = 32 },
		"n_blocks":   func(m *swarm.ModelInfo) { m.NBlocks = 6 },
		"rope_theta": func(m *swarm.ModelInfo) { m.RopeTheta = 5e5 },
		"norm_eps":   func(m *swarm.ModelInfo) { m.NormEps = 1e-6 },
		"arch":       func(m *swarm.ModelInfo) { m.Arch = "qwen3" },
		"sliding_window": func(m *swarm.ModelInfo) {
			m.SlidingWindow = 4096
		},
		"sliding_pattern": func(m *swarm.ModelInfo) { m.SlidingPattern = 6 },
	} {
		m := testModel
		change(&m)
		err := sameModel(testModel, m)
		require.ErrorIs(t, err, ErrModelMismatch, name)
		require.ErrorContains(t, err, "server's "+name, name)
	}
}

// TestRouteByAdvertisedCapacity checks that a server is routed by the
// attention-cache capacity and per-token cache bytes IT advertises, not by
// the client's copy of the model: a Q8_0 server (its weights a quarter of
// the client's f32 ones) with an f16 attention cache (128 bytes per block
// per token, the client's model says 256) and room for exactly two
// sessions of 100 tokens over 5 blocks.
func TestRouteByAdvertisedCapacity(t *testing.T) {
	serverModel := testModel
	serverModel.DType, serverModel.BlockBytes, serverModel.CacheBytesPerToken = swarm.DTypeQ8_0, testModel.BlockBytes/4, 128
	q8 := cand("q8", swarm.Span{Start: 0, End: 5}, 1e-5, time.Millisecond)
	q8.Info.ModelInfo = &serverModel
	q8.Info.CacheBytesPerToken = 128
	q8.Info.CacheBytesCapacity = 2 * 5 * 128 * 100
	// By the client's model these bytes hold less than one block's f32
	// weights: no room at all, and half the room by its cache bytes.
	q8.Info.MemoryBytes = 5*serverModel.BlockBytes + q8.Info.CacheBytesCapacity
	require.Less(t, q8.Info.MemoryBytes, 5*testModel.BlockBytes)

	// A slower server with plenty of room: chosen only while q8 is full.
	slow := cand("slow", swarm.Span{Start: 0, End: 5}, 1e-3, time.Millisecond)
	req := RouteRequest{Model: testModel, Need: testModel.Blocks(), MaxLength: 100}

	for _, tt := range []struct {
		held int // sessions of 5 block caches open at q8, 30 s left each
		want string
	}{
		{0, "q8"},
		{1, "q8"}, // the client's 256 bytes per token would make q8 full here
		{2, "slow"},
	} {
		q8.Info.Sessions = nil
		for range tt.held {
			q8.Info.Sessions = append(q8.Info.Sessions, swarm.SessionLoad{Remaining: 30, Caches: 5})
		}
		plan, err := Route(req, []Candidate{q8, slow})
		require.NoError(t, err)
		require.Len(t, plan.Hops, 1)
		require.Equalf(t, tt.want, plan.Hops[0].Candidate.Info.ID, "%d sessions held at q8", tt.held)
	}
	// Alone, a full q8 is still a route (the session waits, eq. 20).
	plan, err := Route(req, []Candidate{q8})
	require.NoError(t, err)
	require.Equal(t, "q8", plan.Hops[0].Candidate.Info.ID)
}
