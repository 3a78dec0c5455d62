package servertest_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/servertest"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// peer is a client end of a Network connection with a reader goroutine.
type peer struct {
	fc     api.FrameConn
	frames chan wire.Frame // closed when the connection ends
	err    error           // why it ended; read after frames closes
}

func dial(t *testing.T, n *servertest.Network, s *servertest.Server) *peer {
	t.Helper()
	ep, err := api.ParseEndpoint(s.Addr)
	require.NoError(t, err)
	fc, err := n.Dial(t.Context(), ep, 0)
	require.NoError(t, err)
	p := &peer{fc: fc, frames: make(chan wire.Frame, 16)}
	go func() {
		defer close(p.frames)
		for {
			f, err := fc.ReadFrame()
			if err != nil {
				p.err = err
				return
			}
			p.frames <- f
		}
	}()
	t.Cleanup(func() { fc.Close() })
	return p
}

// open opens session sid over span for 10 tokens and waits for Granted.
func (p *peer) open(t *testing.T, sid string, span swarm.Span) {
	t.Helper()
	require.NoError(t, p.fc.WriteFrame(&wire.Open{SessionID: sid, Model: "synth", Span: span, MaxLength: 10, DType: swarm.DTypeF32, AllocTimeout: 10}))
	require.IsType(t, &wire.Granted{}, <-p.frames)
}

// step sends the hidden states x of one token at pos.
func (p *peer) step(t *testing.T, sid string, pos int, x []float32) {
	t.Helper()
	h := wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: len(x), Data: x}
	require.NoError(t, p.fc.WriteFrame(&wire.Step{SessionID: sid, Position: pos, Hidden: h}))
}

// embed returns the hidden state of token id.
func embed(t *testing.T, m *servertest.Model, id int) []float32 {
	t.Helper()
	x, err := m.Head().Embed([]int{id})
	require.NoError(t, err)
	return x
}

var span24 = swarm.Span{Start: 2, End: 4}

// TestNetworkServes: a server of the Network computes what the local
// engine computes for its span, and its info document (read as the
// /swarm/info/1 stream carries it) names it at its URL.
func TestNetworkServes(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	local := m.Session(t, span24, 10)
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		n.Start("a", swarm.Span{Start: 0, End: 2}, nil)
		b := n.Start("b", span24, nil)
		require.Equal(t, []string{"a:1", "b:1"}, n.Addrs())
		require.Equal(t, "ws://b:1/v1/inference", b.URL)

		info, err := n.Info(t.Context(), api.Endpoint{Inference: b.URL})
		require.NoError(t, err)
		require.Equal(t, span24, info.Span)
		require.Equal(t, []string{b.URL}, info.Endpoints)
		require.Equal(t, api.StateServing, info.State)
		require.Equal(t, m.Info().Name, info.ModelInfo.Name)
		require.Equal(t, math.SmallestNonzeroFloat64, info.Tau, "measured on a clock that stands still, tau is at its floor")

		p := dial(t, n, b)
		p.open(t, "s", span24)
		for pos, id := range []int{1, 42, 7} {
			x := embed(t, m, id)
			p.step(t, "s", pos, x)
			r := (<-p.frames).(*wire.Result)
			want, err := local.Forward(t.Context(), pos, x, 1)
			require.NoError(t, err)
			require.Equal(t, want, r.Hidden.Data, "position %d", pos)
		}
		require.Len(t, b.Info().Admission.Open, 1)
	})
}

// TestNetworkKill: a killed server's connections end at once without a
// frame, its sessions are released, and it can be neither dialed nor
// asked for its info.
func TestNetworkKill(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		s := n.Start("a", span24, nil)
		p := dial(t, n, s)
		p.open(t, "s", span24)
		s.Kill()
		_, open := <-p.frames
		require.False(t, open, "no frame after the kill")
		require.ErrorIs(t, p.err, api.ErrClosed)
		synctest.Wait()
		require.Empty(t, s.Info().Admission.Open, "the session's caches are released")

		ep := api.Endpoint{Inference: s.URL}
		_, err := n.Dial(t.Context(), ep, 0)
		require.ErrorIs(t, err, servertest.ErrUnreachable)
		_, err = n.Info(t.Context(), ep)
		require.ErrorIs(t, err, servertest.ErrUnreachable)
		_, err = n.Dial(t.Context(), api.Endpoint{Inference: "ws://nobody:1/v1/inference"}, 0)
		require.ErrorIs(t, err, servertest.ErrUnreachable)
	})
}

// TestNetworkStallAndDelay: a stalled server computes but holds its frames
// and info answers until Resume (an info read gives up with its context);
// a delayed one delivers them exactly the delay later on the fake clock.
func TestNetworkStallAndDelay(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		s := n.Start("a", span24, func(c *server.Config) { c.EmulateLatency = time.Second })
		ep := api.Endpoint{Inference: s.URL}
		p := dial(t, n, s)
		start := time.Now()
		p.open(t, "s", span24)
		require.Equal(t, time.Second, time.Since(start), "the emulated latency runs on the fake clock")

		s.Stall()
		p.step(t, "s", 0, embed(t, m, 1))
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Empty(t, p.frames, "a stalled server's Result is held")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := n.Info(ctx, ep)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		s.Resume()
		require.IsType(t, &wire.Result{}, <-p.frames)

		s.Delay(7 * time.Second)
		start = time.Now()
		p.step(t, "s", 1, embed(t, m, 2))
		require.IsType(t, &wire.Result{}, <-p.frames)
		require.Equal(t, 8*time.Second, time.Since(start), "the delay adds to the emulated latency")
		start = time.Now()
		_, err = n.Info(t.Context(), ep)
		require.NoError(t, err)
		require.Equal(t, 8*time.Second, time.Since(start))
	})
}

// TestNetworkCleanup: the Network's cleanup ends connections whose
// client neither reads nor closes them, with sessions open, on a stalled
// server too (the bubble would report their goroutines as deadlocked
// otherwise).
func TestNetworkCleanup(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		for _, name := range []string{"idle", "stalled"} {
			s := n.Start(name, span24, nil)
			fc, err := n.Dial(t.Context(), api.Endpoint{Inference: s.URL}, 0)
			require.NoError(t, err)
			require.NoError(t, fc.WriteFrame(&wire.Open{SessionID: "s", Model: "synth", Span: span24, MaxLength: 10, DType: swarm.DTypeF32}))
			f, err := fc.ReadFrame()
			require.NoError(t, err)
			require.IsType(t, &wire.Granted{}, f)
			if name == "stalled" {
				s.Stall()
			}
		}
	})
}
