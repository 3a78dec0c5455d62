package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/server/servertest"
)

// healthBoard is an in-memory client.HealthSource (the registry's twin:
// node.Candidates is the real one): it lists the servers given to add
// and reports the health set by mark.
type healthBoard struct {
	mu        sync.Mutex
	badLocked map[string]error
	epsLocked []api.Endpoint
	chLocked  chan struct{}
}

func newHealthBoard() *healthBoard {
	return &healthBoard{badLocked: map[string]error{}, chLocked: make(chan struct{})}
}

func (b *healthBoard) Endpoints(context.Context) ([]api.Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]api.Endpoint(nil), b.epsLocked...), nil
}

// add lists the server at addr from now on, as a registry learns of a
// server that joined.
func (b *healthBoard) add(t *testing.T, addr string) {
	ep, err := api.ParseEndpoint(addr)
	require.NoError(t, err)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.epsLocked = append(b.epsLocked, ep)
	close(b.chLocked)
	b.chLocked = make(chan struct{})
}

func (b *healthBoard) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.chLocked
}

func (b *healthBoard) Health(ep api.Endpoint) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.badLocked[ep.Inference]
}

// mark reports server unhealthy with err.
func (b *healthBoard) mark(server string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.badLocked[server] = err
	close(b.chLocked)
	b.chLocked = make(chan struct{})
}

// TestInMemUnhealthyHopFailsOverAtOnce: the middle hop of a chain hangs
// after the 10th token; its source reports it unhealthy (as the registry
// marks a silent server SUSPECTED) 3 s later, and the waiting step fails
// over then, not at the 30 s step timeout. Another server's health change
// does not disturb the session, and that server, unhealthy, is not probed
// for the replacement; the tokens equal a local run's.
func TestInMemUnhealthyHopFailsOverAtOnce(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at = 24, 10
	want := localGenerate(t, m, tokens)
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		fleet := memFleet(n, []fleetSpec{
			{spanOf(0, 2), 0}, {spanOf(2, 4), 0}, {spanOf(4, 6), 0}, {spanOf(1, 5), 5 * time.Millisecond}, {spanOf(0, 6), time.Second},
		})
		board := newHealthBoard()
		sess := memOpen(t, m, n, tokens+1, fleet[:3], client.WithSource(board), client.WithStepTimeout(30*time.Second))
		suspected := errors.New("the registry shows it SUSPECTED")
		got := memGenerate(t, m, sess, tokens, at, func() {
			fleet[1].Stall()
			go func() {
				time.Sleep(time.Second)
				board.mark(fleet[4].URL, errors.New("a server outside the chain"))
				time.Sleep(2 * time.Second)
				board.mark(fleet[1].URL, suspected)
			}()
		})
		require.Equal(t, want.tokens, ids(got))
		require.Equal(t, want.next, nextStep(t, m, sess, want.tokens))

		late := got[at+1].Latency
		require.GreaterOrEqual(t, late, 3*time.Second)
		require.Less(t, late, 3*time.Second+100*time.Millisecond,
			"failed over when reported, not at the step timeout; the unhealthy server outside the chain (1 s latency) was not probed")
		st := sess.Stats()
		require.Len(t, st.Replaced, 1)
		require.Equal(t, fleet[1].URL, st.Replaced[0].Server)
		require.Contains(t, st.Replaced[0].Failure, "server reported unhealthy")
		require.Contains(t, st.Replaced[0].Failure, "SUSPECTED")
		require.Equal(t, fleet[3].URL, st.Hops[1].Server)
	})
}

// TestInMemUnhealthyWithoutReplacementWaits: a suspicion is no proof.
// When no other server can take the hop's blocks, the step waits on: the
// slow (5 s) but live server answers, and the session goes on there.
func TestInMemUnhealthyWithoutReplacementWaits(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at = 16, 5
	want := localGenerate(t, m, tokens)
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		fleet := memFleet(n, []fleetSpec{{spanOf(0, 3), 0}, {spanOf(3, 6), 0}})
		board := newHealthBoard()
		sess := memOpen(t, m, n, tokens+1, fleet, client.WithSource(board))
		got := memGenerate(t, m, sess, tokens, at, func() {
			fleet[1].Delay(5 * time.Second)
			go func() {
				time.Sleep(time.Second)
				board.mark(fleet[1].URL, errors.New("the registry shows it SUSPECTED"))
			}()
		})
		require.Equal(t, want.tokens, ids(got))
		require.Equal(t, 5*time.Second, got[at+1].Latency, "waited for the slow answer")
		require.Empty(t, sess.Stats().Replaced)
	})
}

// TestInMemFailoverWaitsForCoverage: the last hop of a chain shuts down
// after the 5th token and no other server hosts its blocks; 2 s later a
// server over them joins (its source lists it, as a registry learns of a
// server moving its span there). With the default failover wait, the
// session waits for it, replays there and its tokens equal a local run's;
// the next token comes exactly when the server joined. With a 1 s wait the
// failover gives up at 1 s, naming the uncovered blocks.
func TestInMemFailoverWaitsForCoverage(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at, joins = 16, 5, 2 * time.Second
	want := localGenerate(t, m, tokens)
	for _, tt := range []struct {
		name string
		opts []client.Option
		wait time.Duration // 0: the default, longer than joins
	}{
		{"default wait", nil, 0},
		{"1 s wait", []client.Option{client.WithFailoverWait(time.Second)}, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := servertest.NewNetwork(t, m)
				fleet := memFleet(n, []fleetSpec{{spanOf(0, 3), 0}, {spanOf(3, 6), 0}})
				board := newHealthBoard()
				sess := memOpen(t, m, n, tokens+1, fleet, append([]client.Option{client.WithSource(board)}, tt.opts...)...)
				var late *servertest.Server
				var toks []client.Token
				var genErr error
				var failedAt time.Time
				start := time.Now()
				for tok, err := range sess.Generate(t.Context(), []int{m.Info().BOS}, tokens, greedy(t)) {
					if err != nil {
						genErr, failedAt = err, time.Now()
						break
					}
					toks = append(toks, tok)
					if tok.Index == at {
						fleet[1].Shutdown(context.Background())
						go func() {
							time.Sleep(joins) // the bubble's fake clock: the scenario's 2 s, not a wait for a race
							late = n.Start("late", spanOf(3, 6), nil)
							board.add(t, late.Addr)
						}()
						start = time.Now()
					}
				}
				if tt.wait != 0 {
					require.ErrorIs(t, genErr, client.ErrFailover)
					var nc *client.NoChainError
					require.ErrorAs(t, genErr, &nc)
					require.Equal(t, tt.wait, failedAt.Sub(start), "gave up when the wait ended")
					require.Len(t, toks, at+1)
					time.Sleep(joins) // fake clock: let the late server join (unused) before the bubble ends
					synctest.Wait()
					return
				}
				require.NoError(t, genErr)
				require.Equal(t, want.tokens, ids(toks))
				require.Equal(t, joins, toks[at+1].Latency, "waited for the joining server, no longer")
				st := sess.Stats()
				require.Len(t, st.Replaced, 1)
				require.Equal(t, fleet[1].URL, st.Replaced[0].Server)
				require.Equal(t, late.URL, st.Hops[1].Server)
				require.Equal(t, at+1, st.Hops[1].Replayed)
			})
		})
	}
}
