package client_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/server/servertest"
	"github.com/swarmllm/swarm/swarm"
)

// TestInMemReplay drives Forward directly: a prefill of 5 positions, then
// single positions up to 20. A hop is killed after position 12, and the
// client replays its 13 positions, in chunks of 1 or 7 (the prefill chunk
// regrouped), into replacements whose spans start earlier, end later or
// split the failed hop's blocks in two. Every output equals the local
// engine's, bit for bit (f32 on the wire), before and after the failover.
func TestInMemReplay(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const prefill, killAfter, length = 5, 12, 20
	slow := 5 * time.Millisecond
	tests := []struct {
		name      string
		fleet     []fleetSpec
		victim    int   // index in fleet
		wantChain []int // fleet indices of the initial chain
		wantAfter []int // fleet indices after the failover
		wantSpans []swarm.Span
	}{
		{
			name:      "replacement starts earlier",
			fleet:     []fleetSpec{{spanOf(0, 3), 0}, {spanOf(3, 6), 0}, {spanOf(1, 6), slow}},
			victim:    1,
			wantChain: []int{0, 1}, wantAfter: []int{0, 2}, wantSpans: []swarm.Span{spanOf(0, 3), spanOf(3, 6)},
		},
		{
			name:      "replacement ends later",
			fleet:     []fleetSpec{{spanOf(0, 2), 0}, {spanOf(2, 4), 0}, {spanOf(4, 6), 0}, {spanOf(2, 5), slow}},
			victim:    1,
			wantChain: []int{0, 1, 2}, wantAfter: []int{0, 3, 2}, wantSpans: []swarm.Span{spanOf(0, 2), spanOf(2, 4), spanOf(4, 6)},
		},
		{
			name:      "blocks split over two replacements",
			fleet:     []fleetSpec{{spanOf(0, 2), 0}, {spanOf(2, 6), 0}, {spanOf(2, 4), slow}, {spanOf(4, 6), slow}},
			victim:    1,
			wantChain: []int{0, 1}, wantAfter: []int{0, 2, 3}, wantSpans: []swarm.Span{spanOf(0, 2), spanOf(2, 4), spanOf(4, 6)},
		},
		{
			name:      "first hop",
			fleet:     []fleetSpec{{spanOf(0, 2), 0}, {spanOf(2, 6), 0}, {spanOf(0, 3), slow}},
			victim:    0,
			wantChain: []int{0, 1}, wantAfter: []int{2, 1}, wantSpans: []swarm.Span{spanOf(0, 2), spanOf(2, 6)},
		},
	}

	// The inputs: embeddings of a fixed token sequence, and the local
	// engine's outputs for them, in the steps the client makes.
	d := m.Info().DModel
	seq := make([]int, length+1)
	for i := range seq {
		seq[i] = (i*37 + 11) % m.Info().Vocab
	}
	x, err := m.Head().Embed(seq)
	require.NoError(t, err)
	type step struct{ pos, n int }
	steps := []step{{0, prefill}}
	for pos := prefill; pos <= length; pos++ {
		steps = append(steps, step{pos, 1})
	}
	local := m.Session(t, m.Info().Blocks(), length+1)
	want := make([][]float32, len(steps))
	for i, s := range steps {
		want[i], err = local.Forward(t.Context(), s.pos, x[s.pos*d:(s.pos+s.n)*d], s.n)
		require.NoError(t, err)
	}

	for _, tt := range tests {
		for _, chunk := range []int{1, 7} {
			t.Run(fmt.Sprintf("%s, chunks of %d", tt.name, chunk), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					n := servertest.NewNetwork(t, m)
					fleet := memFleet(n, tt.fleet)
					pick := func(idx []int) []*servertest.Server {
						return apply(idx, func(j int) *servertest.Server { return fleet[j] })
					}
					sess := memOpen(t, m, n, length+1, pick(tt.wantChain), client.WithReplayChunk(chunk))

					for i, s := range steps {
						got, err := sess.Forward(t.Context(), s.pos, x[s.pos*d:(s.pos+s.n)*d], s.n)
						require.NoError(t, err)
						require.Equal(t, want[i], got, "positions %d..%d", s.pos, s.pos+s.n-1)
						if s.pos+s.n-1 == killAfter {
							fleet[tt.victim].Kill()
						}
					}

					st := sess.Stats()
					require.Equal(t, urls(pick(tt.wantAfter)...), chainURLs(st.Hops), "chain after the failover")
					for i, h := range st.Hops {
						require.Equal(t, tt.wantSpans[i], h.Span, "hop %d", i)
					}
					require.Len(t, st.Replaced, 1)
					require.Equal(t, fleet[tt.victim].URL, st.Replaced[0].Server)
					require.Equal(t, 1+killAfter-prefill+1, st.Replaced[0].Steps, "the prefill and the single steps up to the kill")
					history := killAfter + 1
					replaySteps := (history + chunk - 1) / chunk
					replacements := 0
					for _, h := range st.Hops {
						if h.Replayed == 0 {
							continue
						}
						replacements++
						require.Equal(t, history, h.Replayed, "%s gets the %d positions of the history", h.Server, history)
						require.Equal(t, replaySteps+length-killAfter, h.Steps, "%s: the replay in chunks of %d, then the steps after the kill", h.Server, chunk)
					}
					require.Equal(t, len(tt.wantAfter)-len(tt.wantChain)+1, replacements, "every replacement was replayed into")
				})
			})
		}
	}
}
