package wire_test

import (
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// benchStep is a decode step of a 7B-shaped model (d_model 4096) with
// n tokens of hidden states, values in the range of real activations.
func benchStep(n int, dt swarm.DType) *wire.Step {
	data := make([]float32, n*4096)
	for i := range data {
		data[i] = float32(math.Sin(float64(i))) * 4
	}
	return &wire.Step{SessionID: "bench-session", Position: 100,
		Hidden: wire.Hidden{DType: dt, NTokens: n, DModel: 4096, Data: data}}
}

var benchShapes = []struct {
	n  int
	dt swarm.DType
}{
	{1, swarm.DTypeF16}, {1, swarm.DTypeBF16}, {1, swarm.DTypeF32},
	{128, swarm.DTypeF16}, {128, swarm.DTypeBF16}, {128, swarm.DTypeF32},
}

// BenchmarkEncodeStep measures Encode of one Step frame to a discarding
// writer; MB/s counts frame bytes on the wire.
func BenchmarkEncodeStep(b *testing.B) {
	for _, s := range benchShapes {
		step := benchStep(s.n, s.dt)
		frame, err := wire.Marshal(step)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dx4096/%s", s.n, s.dt), func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if err := wire.Encode(io.Discard, step); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeStep measures Unmarshal of one Step frame (a websocket
// binary message) into float32 hidden states.
func BenchmarkDecodeStep(b *testing.B) {
	for _, s := range benchShapes {
		frame, err := wire.Marshal(benchStep(s.n, s.dt))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dx4096/%s", s.n, s.dt), func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.Unmarshal(frame, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
