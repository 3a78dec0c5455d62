package blocks

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

func ropeInfo(s *swarm.RopeScaling) swarm.ModelInfo {
	return swarm.ModelInfo{HeadDim: 128, RopeTheta: 500000, RopeScaling: s}
}

// TestRopeFrequencies checks theta^(-2i/d) and llama2.c's float32 rounding
// of it, linear scaling (position p at factor 2 is position p/2 unscaled)
// and GGUF rope_freqs divisors.
func TestRopeFrequencies(t *testing.T) {
	r, err := newRope(ropeInfo(nil), nil)
	require.NoError(t, err)
	require.Equal(t, float32(1), r.invFreq[0])
	require.InEpsilon(t, math.Pow(500000, -2.0*10/128), float64(r.invFreq[10]), 1e-6)

	lin, err := newRope(ropeInfo(&swarm.RopeScaling{Type: "linear", Factor: 2}), nil)
	require.NoError(t, err)
	c1, s1 := make([]float32, 64), make([]float32, 64)
	c2, s2 := make([]float32, 64), make([]float32, 64)
	lin.table(10, c1, s1)
	r.table(5, c2, s2)
	require.InDeltaSlice(t, c2, c1, 1e-6)
	require.InDeltaSlice(t, s2, s1, 1e-6)

	factors := make([]float32, 64)
	for i := range factors {
		factors[i] = float32(1 + i%3)
	}
	g, err := newRope(ropeInfo(nil), factors)
	require.NoError(t, err)
	for i := range factors {
		require.Equal(t, r.invFreq[i]/factors[i], g.invFreq[i])
	}
	_, err = newRope(ropeInfo(nil), factors[:3])
	require.ErrorIs(t, err, ErrFormat)
}

// TestLlama3Scaling checks Hugging Face's _compute_llama3_parameters on
// Llama 3.1's settings (factor 8, low 1, high 4, original 8192): periods
// shorter than 8192/4 are kept, longer than 8192/1 divided by 8, and in
// between interpolated.
func TestLlama3Scaling(t *testing.T) {
	s := &swarm.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192}
	require.NoError(t, validRopeScaling(s))
	high := float32(2 * math.Pi / 1000) // period 1000 < 2048
	require.Equal(t, high, scaleFreq(high, s))
	low := float32(2 * math.Pi / 10000) // period 10000 > 8192
	require.Equal(t, low/8, scaleFreq(low, s))
	mid := float32(2 * math.Pi / 4096) // smooth = (8192/4096 - 1) / 3 = 1/3
	require.InDelta(t, float64(mid)*(2.0/3/8+1.0/3), float64(scaleFreq(mid, s)), 1e-9)

	require.ErrorIs(t, validRopeScaling(&swarm.RopeScaling{Type: "yarn", Factor: 4}), ErrFormat)
	require.ErrorIs(t, validRopeScaling(&swarm.RopeScaling{Type: "llama3", Factor: 8}), ErrFormat)
}
