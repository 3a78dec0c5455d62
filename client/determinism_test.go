package client_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// TestEnginePrefillMatchesDecode checks the property the failover replay
// relies on: running a hop's history as one prefill (WithReplayChunk(0),
// the default) leaves the same attention caches as the token-by-token decode
// steps that built it originally. Both the prefill's outputs and the
// outputs of later decode steps must be bit-identical, for every weight
// dtype the engine computes (f32 stories260K; f16, bf16 and q8_0 synthetic
// models), over a sub-span as a replacement hop would process.
func TestEnginePrefillMatchesDecode(t *testing.T) {
	dir := t.TempDir()
	models := map[string]string{"stories260K f32": stories(t, "stories260K.bin")}
	for _, dt := range []swarm.DType{swarm.DTypeF16, swarm.DTypeBF16, swarm.DTypeQ8_0} {
		cfg := synth.DefaultConfig()
		cfg.Layers, cfg.DType, cfg.Seed = 3, dt, 7
		path := filepath.Join(dir, dt.String()+".gguf")
		require.NoError(t, synth.WriteGGUF(path, cfg))
		models["synth "+dt.String()] = path
	}
	for name, path := range models {
		t.Run(name, func(t *testing.T) {
			m, err := blocks.Open(path)
			require.NoError(t, err)
			info := m.Info()
			span := swarm.Span{Start: 1, End: info.NBlocks}
			e, err := m.LoadSpan(span)
			m.Close()
			require.NoError(t, err)
			defer e.Close()
			d := info.DModel
			const history, after = 37, 5
			x := make([]float32, (history+after)*d)
			for i := range x {
				x[i] = float32(math.Sin(float64(i)*0.37)) * 2
			}
			decode, err := e.NewSession(span, history+after)
			require.NoError(t, err)
			prefill, err := e.NewSession(span, history+after)
			require.NoError(t, err)
			var stepwise []float32
			for p := range history {
				y, err := decode.Forward(context.Background(), p, x[p*d:(p+1)*d], 1)
				require.NoError(t, err)
				stepwise = append(stepwise, y...)
			}
			batched, err := prefill.Forward(context.Background(), 0, x[:history*d], history)
			require.NoError(t, err)
			requireBits(t, stepwise, batched, "prefill outputs")
			for p := history; p < history+after; p++ {
				a, err := decode.Forward(context.Background(), p, x[p*d:(p+1)*d], 1)
				require.NoError(t, err)
				b, err := prefill.Forward(context.Background(), p, x[p*d:(p+1)*d], 1)
				require.NoError(t, err)
				requireBits(t, a, b, "decode after the history")
			}
		})
	}
}

func requireBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s: value %d is %v, want %v (bits %#x vs %#x)", what, i, got[i], want[i], math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}
