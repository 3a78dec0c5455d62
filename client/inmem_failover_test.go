package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/servertest"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// The InMem tests are the in-memory twins of the failover and replay tests:
// servers of a synthesized model on a servertest.Network, reached over
// api.Pipe, inside a synctest bubble (timeouts and latencies on the fake
// clock), checked against a local engine. They need neither ../shared nor
// sockets.

// memFleet starts one server per spec on n, named s0, s1, ... in order; a
// spec's latency is the server's emulated latency (fake clock), which
// steers routing since every server's measured tau is the same floor.
func memFleet(n *servertest.Network, specs []fleetSpec) []*servertest.Server {
	servers := make([]*servertest.Server, len(specs))
	for i, sp := range specs {
		servers[i] = n.Start(fmt.Sprintf("s%d", i), sp.span, func(c *server.Config) { c.EmulateLatency = sp.latency })
	}
	return servers
}

// memClient is a client of m over every server of n.
func memClient(t *testing.T, m *servertest.Model, n *servertest.Network, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(m.Head(), n.Addrs(), append([]client.Option{client.WithDialer(n.Dial), client.WithInfoFetcher(n.Info)}, opts...)...)
	require.NoError(t, err)
	return c
}

// apply returns f of each element of xs.
func apply[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// urls returns the servers' inference URLs.
func urls(servers ...*servertest.Server) []string {
	return apply(servers, func(s *servertest.Server) string { return s.URL })
}

// chainURLs returns the servers of a chain's hops.
func chainURLs(hops []client.HopStats) []string {
	return apply(hops, func(h client.HopStats) string { return h.Server })
}

// ids returns the tokens' ids.
func ids(toks []client.Token) []int { return apply(toks, func(tok client.Token) int { return tok.ID }) }

func spanOf(a, b int) swarm.Span { return swarm.Span{Start: a, End: b} }

// reference is what a local session over all blocks of m computes: the
// greedy tokens after BOS, and the output of one more step (the last token
// at the next position), which attends over every cached position of
// every block.
type reference struct {
	tokens []int
	next   []float32
}

func localGenerate(t *testing.T, m *servertest.Model, maxTokens int) reference {
	t.Helper()
	local := m.Session(t, m.Info().Blocks(), maxTokens+1)
	ids, err := blocks.Generate(context.Background(), m.Head(), local, []int{m.Info().BOS}, maxTokens, greedy(t), func(int, int) error { return nil })
	require.NoError(t, err)
	require.Len(t, ids, maxTokens, "the reference runs to the end (no EOS), so the failover happens mid-generation")
	return reference{tokens: ids, next: nextStep(t, m, local, ids)}
}

// nextStep runs the last generated token at the next position through fw.
func nextStep(t *testing.T, m *servertest.Model, fw blocks.Forwarder, ids []int) []float32 {
	t.Helper()
	x, err := m.Head().Embed(ids[len(ids)-1:])
	require.NoError(t, err)
	y, err := fw.Forward(context.Background(), len(ids), x, 1)
	require.NoError(t, err)
	return y
}

// memOpen opens a session of maxLength tokens through a memClient and
// checks the chain it chose. Cleanup closes it.
func memOpen(t *testing.T, m *servertest.Model, n *servertest.Network, maxLength int, chain []*servertest.Server, opts ...client.Option) *client.Session {
	t.Helper()
	sess, err := memClient(t, m, n, opts...).Open(t.Context(), maxLength)
	require.NoError(t, err)
	t.Cleanup(func() { sess.Close() })
	require.Equal(t, urls(chain...), chainURLs(sess.Chain()), "initial chain")
	return sess
}

// memGenerate generates maxTokens greedy tokens after BOS through sess,
// calls hook after the token of index at, and returns the tokens.
func memGenerate(t *testing.T, m *servertest.Model, sess *client.Session, maxTokens, at int, hook func()) []client.Token {
	t.Helper()
	var toks []client.Token
	for tok, err := range sess.Generate(t.Context(), []int{m.Info().BOS}, maxTokens, greedy(t)) {
		require.NoError(t, err)
		toks = append(toks, tok)
		if tok.Index == at {
			hook()
		}
	}
	return toks
}

// TestInMemFailoverMiddleHop: a chain of three servers over [0,2), [2,4),
// [4,6) with two slower spares; the middle hop crashes (or shuts down
// gracefully) after the 15th token. The client replaces it by the spare
// over [1,4) processing blocks 2..3, replays the 15 positions of its
// history there, and the tokens, and the output of one more step, equal a
// local run's.
func TestInMemFailoverMiddleHop(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at = 30, 14
	want := localGenerate(t, m, tokens)
	for _, graceful := range []bool{false, true} {
		t.Run(fmt.Sprintf("graceful=%v", graceful), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := servertest.NewNetwork(t, m)
				fleet := memFleet(n, []fleetSpec{
					{spanOf(0, 2), 0}, {spanOf(2, 4), 0}, {spanOf(4, 6), 0},
					{spanOf(1, 4), 5 * time.Millisecond}, {spanOf(2, 6), 10 * time.Millisecond},
				})
				sess := memOpen(t, m, n, tokens+1, fleet[:3])
				got := memGenerate(t, m, sess, tokens, at, func() {
					if graceful {
						fleet[1].Shutdown(context.Background())
					} else {
						fleet[1].Kill()
					}
				})
				require.Equal(t, want.tokens, ids(got))
				require.Equal(t, want.next, nextStep(t, m, sess, want.tokens), "the replayed caches hold exactly the local ones")

				st := sess.Stats()
				require.Equal(t, urls(fleet[0], fleet[3], fleet[2]), chainURLs(st.Hops))
				require.Equal(t, []swarm.Span{spanOf(0, 2), spanOf(2, 4), spanOf(4, 6)}, []swarm.Span{st.Hops[0].Span, st.Hops[1].Span, st.Hops[2].Span})
				require.Len(t, st.Replaced, 1)
				require.Equal(t, fleet[1].URL, st.Replaced[0].Server)
				require.Equal(t, at+1, st.Replaced[0].Steps, "the victim answered the prompt and %d tokens", at)
				require.Equal(t, at+1, st.Hops[1].Replayed)
				require.Zero(t, st.Hops[0].Replayed+st.Hops[2].Replayed)
				require.Equal(t, 1, st.Failovers)
				if graceful {
					require.Contains(t, st.Replaced[0].Failure, "ShuttingDown")
				}
			})
		})
	}
}

// TestInMemFailoverStepTimeout: with a 30 s step timeout, a middle hop
// that stalls (or whose frames are delayed past the timeout) after the
// 10th token is replaced once the timeout fires on the fake clock, and the
// tokens equal a local run's; a delay under the timeout only slows the
// steps down, by exactly the delay. None of it takes real time.
func TestInMemFailoverStepTimeout(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at, timeout = 30, 10, 30 * time.Second
	want := localGenerate(t, m, tokens)
	tests := []struct {
		name     string
		hang     func(*servertest.Server)
		failover bool
	}{
		{"stall", (*servertest.Server).Stall, true},
		{"delay past the timeout", func(s *servertest.Server) { s.Delay(45 * time.Second) }, true},
		{"delay under the timeout", func(s *servertest.Server) { s.Delay(10 * time.Second) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := servertest.NewNetwork(t, m)
				fleet := memFleet(n, []fleetSpec{
					{spanOf(0, 2), 0}, {spanOf(2, 4), 0}, {spanOf(4, 6), 0}, {spanOf(1, 5), 5 * time.Millisecond},
				})
				sess := memOpen(t, m, n, tokens+1, fleet[:3], client.WithStepTimeout(timeout))
				got := memGenerate(t, m, sess, tokens, at, func() { tt.hang(fleet[1]) })
				require.Equal(t, want.tokens, ids(got))
				require.Equal(t, want.next, nextStep(t, m, sess, want.tokens))

				st := sess.Stats()
				late := got[at+1].Latency
				if !tt.failover {
					require.Empty(t, st.Replaced)
					require.Equal(t, 10*time.Second, late, "the step waits exactly the delay")
					return
				}
				require.GreaterOrEqual(t, late, timeout, "the step timed out on the fake clock")
				require.Less(t, late, timeout+time.Second, "then failed over at once")
				require.Len(t, st.Replaced, 1)
				require.Equal(t, fleet[1].URL, st.Replaced[0].Server)
				require.Contains(t, st.Replaced[0].Failure, "step timed out")
				require.Equal(t, fleet[3].URL, st.Hops[1].Server)
				require.Equal(t, spanOf(2, 4), st.Hops[1].Span)
				require.Equal(t, at+1, st.Hops[1].Replayed)
			})
		})
	}
}

// TestInMemShuttingDownBeforeTheWriteFails: a server that shuts down sends
// ShuttingDown and closes the connection; when the client's next Step
// write fails before its reader has handed that Error frame over (here
// the reader takes a second of fake time to do so), the failure is still
// reported as ShuttingDown, not as a bare closed connection.
func TestInMemShuttingDownBeforeTheWriteFails(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at = 20, 9
	want := localGenerate(t, m, tokens)
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		fleet := memFleet(n, []fleetSpec{{spanOf(0, 3), 0}, {spanOf(3, 6), 0}, {spanOf(2, 6), 5 * time.Millisecond}})
		dial := func(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
			fc, err := n.Dial(ctx, ep, maxPayload)
			if err != nil || ep.Inference != fleet[1].URL {
				return fc, err
			}
			return &lateErrorConn{FrameConn: fc, writeFailed: make(chan struct{}), closed: make(chan struct{})}, nil
		}
		sess := memOpen(t, m, n, tokens+1, fleet[:2], client.WithDialer(dial))
		got := memGenerate(t, m, sess, tokens, at, func() { fleet[1].Shutdown(context.Background()) })
		require.Equal(t, want.tokens, ids(got))
		st := sess.Stats()
		require.Len(t, st.Replaced, 1)
		require.Contains(t, st.Replaced[0].Failure, "ShuttingDown")
		require.Equal(t, fleet[2].URL, st.Hops[1].Server)
	})
}

// lateErrorConn hands an Error frame to its reader only a second (of fake
// time) after a write failed, or once closed.
type lateErrorConn struct {
	api.FrameConn
	writeFailed chan struct{}
	closed      chan struct{}
	failOnce    sync.Once
	closeOnce   sync.Once
}

func (c *lateErrorConn) ReadFrame() (wire.Frame, error) {
	f, err := c.FrameConn.ReadFrame()
	if _, isErr := f.(*wire.Error); isErr {
		select {
		case <-c.writeFailed:
		case <-c.closed:
		}
		time.Sleep(time.Second)
	}
	return f, err
}

func (c *lateErrorConn) WriteFrame(f wire.Frame) error {
	err := c.FrameConn.WriteFrame(f)
	if err != nil {
		c.failOnce.Do(func() { close(c.writeFailed) })
	}
	return err
}

func (c *lateErrorConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.FrameConn.Close()
}

// TestInMemFailoverPrefersSameKernels: when the middle hop of [0,2),
// [2,4), [4,6) crashes, the replacement is the spare that advertises the
// victim's kernels (slower) rather than one that advertises other kernels
// (faster), whose replay would rebuild the caches only up to the last
// bits; with only the other-kernels spare left, the session fails over to
// it. (Every server here computes alike; the test fetcher only relabels
// one server's kernels.)
func TestInMemFailoverPrefersSameKernels(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at = 20, 8
	want := localGenerate(t, m, tokens)
	for _, sameSpare := range []bool{true, false} {
		t.Run(fmt.Sprintf("same-kernels spare=%v", sameSpare), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := servertest.NewNetwork(t, m)
				specs := []fleetSpec{
					{spanOf(0, 2), 0}, {spanOf(2, 4), 0}, {spanOf(4, 6), 0},
					{spanOf(2, 4), 2 * time.Millisecond}, // other kernels, faster
				}
				if sameSpare {
					specs = append(specs, fleetSpec{spanOf(2, 4), 10 * time.Millisecond})
				}
				fleet := memFleet(n, specs)
				other := fleet[3].URL
				relabel := client.WithInfoFetcher(func(ctx context.Context, ep api.Endpoint) (api.Info, error) {
					info, err := n.Info(ctx, ep)
					if err == nil && ep.Inference == other {
						info.Kernels = "other"
					}
					return info, err
				})
				sess := memOpen(t, m, n, tokens+1, fleet[:3], relabel)
				got := memGenerate(t, m, sess, tokens, at, func() { fleet[1].Kill() })
				require.Equal(t, want.tokens, ids(got))

				st := sess.Stats()
				wantChain := urls(fleet[0], fleet[3], fleet[2])
				if sameSpare {
					wantChain = urls(fleet[0], fleet[4], fleet[2])
				}
				require.Equal(t, wantChain, chainURLs(st.Hops))
				require.Equal(t, 1, st.Failovers)
			})
		})
	}
}
