package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// benchPositions is the window of positions decode steps cycle through, so
// that every iteration attends over a bounded, equal history (positions
// 1..benchPositions, then back to 1: a step at a position below the cache
// length truncates it).
const benchPositions = 255

// decoder is what the benchmarks step: a local engine session or a client
// session over a chain.
type decoder = blocks.Forwarder

// decodeSteps runs n single-token decode steps and returns the mean time
// per token. Position 0 is filled first.
func decodeSteps(b *testing.B, d decoder, x []float32, n int) time.Duration {
	b.Helper()
	if _, err := d.Forward(context.Background(), 0, x, 1); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		if _, err := d.Forward(context.Background(), 1+i%benchPositions, x, 1); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// benchSetup loads stories260K's head and a local session over all blocks.
func benchSetup(b *testing.B) (blocks.Head, blocks.Session, []float32) {
	model := stories(b, "stories260K.bin")
	m, err := blocks.Open(model, blocks.WithTokenizer(stories(b, "tok512.bin")))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	head, err := m.LoadHead()
	if err != nil {
		b.Fatal(err)
	}
	engine, err := m.LoadSpan(m.Info().Blocks())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { engine.Close() })
	local, err := engine.NewSession(engine.Span(), benchPositions+1)
	if err != nil {
		b.Fatal(err)
	}
	x, err := head.Embed([]int{403})
	if err != nil {
		b.Fatal(err)
	}
	return head, local, x
}

// BenchmarkDecodeLocal is the per-token decode time of stories260K's 5
// blocks in this process (generate --local): ns/op is ns per token.
func BenchmarkDecodeLocal(b *testing.B) {
	_, local, x := benchSetup(b)
	if _, err := local.Forward(context.Background(), 0, x, 1); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if _, err := local.Forward(context.Background(), 1+i%benchPositions, x, 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDecodeChain3 is the per-token decode time of the same model
// through a 3-hop chain ([0,2), [2,4), [4,5)) of in-process servers over
// real loopback TCP websockets, hub-spoke from a client session, with each
// server's emulated latency as in `swarm serve --emulate-latency`. ns/op
// is ns per token; ms-added/hop is (chain - local) / 3 in milliseconds,
// with the local time measured just before, in the same run
// (local-ns/token, the mean of 2000 local steps).
func BenchmarkDecodeChain3(b *testing.B) {
	head, local, x := benchSetup(b)
	for _, latency := range []time.Duration{0, time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%v", latency), func(b *testing.B) {
			localPerToken := decodeSteps(b, local, x, 2000)
			var urls []string
			for _, span := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}, {Start: 4, End: 5}} {
				urls = append(urls, startServer(b, stories(b, "stories260K.bin"), span, func(c *server.Config) { c.EmulateLatency = latency }).url)
			}
			c, err := client.New(head, urls)
			if err != nil {
				b.Fatal(err)
			}
			sess, err := c.Open(context.Background(), benchPositions+1)
			if err != nil {
				b.Fatal(err)
			}
			defer sess.Close()
			if len(sess.Chain()) != 3 {
				b.Fatalf("chain of %d hops, want 3", len(sess.Chain()))
			}
			if _, err := sess.Forward(context.Background(), 0, x, 1); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if _, err := sess.Forward(context.Background(), 1+i%benchPositions, x, 1); err != nil {
					b.Fatal(err)
				}
				i++
			}
			perToken := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(localPerToken.Nanoseconds()), "local-ns/token")
			b.ReportMetric(float64(perToken-localPerToken)/3/1e6, "ms-added/hop")
		})
	}
}
