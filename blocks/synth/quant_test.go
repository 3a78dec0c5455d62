package synth

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestQuantizersRoundTrip quantizes N(0, 1) values with every quantizer
// and requires the dequantized values within each type's error bound, as a
// fraction of the block's max |x|: half a step for the asymmetric (min,
// scale) types, whose range (at most 2 max |x|) is split into 2^bits - 1
// steps; a whole step for the symmetric ones, whose largest value sets the
// scale at level -2^(bits-1), so that values of the other sign clamp at
// 2^(bits-1) - 1 (IQ4's levels: -127 .. 113 apart by at most 24); plus
// room for the f16 and 4/6/8-bit rounding of the scales (larger for the
// K-quants, whose group scales are quantized against the super-block's).
// It also requires a block of zeros to stay zeros (no division by a zero
// scale).
func TestQuantizersRoundTrip(t *testing.T) {
	tol := map[swarm.DType]float64{
		swarm.DTypeQ8_0: 0.57 / 127, swarm.DTypeQ4_0: 1.0/8 + 0.01, swarm.DTypeQ4_1: 1.0/15 + 0.01,
		swarm.DTypeQ5_0: 1.0/16 + 0.01, swarm.DTypeQ5_1: 1.0/31 + 0.01,
		swarm.DTypeQ2_K: 1.0/3 + 0.12, swarm.DTypeQ3_K: 1.0/4 + 0.06, swarm.DTypeQ4_K: 1.0/15 + 0.03,
		swarm.DTypeQ5_K: 1.0/31 + 0.03, swarm.DTypeQ6_K: 1.0/32 + 0.02,
		swarm.DTypeIQ4_NL: 14.0/127 + 0.01, swarm.DTypeIQ4_XS: 14.0/127 + 0.04,
	}
	require.Len(t, tol, len(quantizers))
	rng := rand.New(rand.NewPCG(5, 6))
	for dt, frac := range tol {
		t.Run(dt.String(), func(t *testing.T) {
			bs := dt.BlockSize()
			x := make([]float32, 8*bs)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			q := quantize(x, dt)
			require.Len(t, q, int(dt.Bytes(int64(len(x)))))
			y := make([]float32, len(x))
			dequantize(q, dt, y)
			for b := range len(x) / bs {
				blk := x[b*bs : (b+1)*bs]
				amax := float64(abs32(signedMax(blk)))
				for i := range blk {
					require.InDelta(t, blk[i], y[b*bs+i], frac*amax, "block %d element %d", b, i)
				}
			}
			zeros := make([]float32, bs)
			dequantize(quantize(zeros, dt), dt, y[:bs])
			for _, v := range y[:bs] {
				require.False(t, math.IsNaN(float64(v)))
				require.Zero(t, v)
			}
		})
	}
}

// TestQ4_0Block checks one Q4_0 block by hand: values (i-16)/8 have the
// signed max -2 (i = 0), so d = -2/-8 = 0.25 and q = x/d + 8 = i/2 rounded.
func TestQ4_0Block(t *testing.T) {
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i-16) / 8
	}
	q := quantize(x, swarm.DTypeQ4_0)
	require.Equal(t, []byte{0x00, 0x34}, q[:2], "d = 0.25 as f16")
	require.Equal(t, byte(0|8<<4), q[2], "element 0: q 0; element 16: q 8")
	require.Equal(t, byte(1|9<<4), q[3], "element 1: 1/2 + 0.5 rounds to 1; element 17: q 9")
}

// TestMixQ4_K_M checks the dtype each tensor gets from llama.cpp's Q4_K_M
// rule over 8 blocks: use_more_bits picks blocks 0 (first eighth), 7
// (last eighth) and 3 and 6 ((i - 1) % 3 == 2).
func TestMixQ4_K_M(t *testing.T) {
	c := DefaultConfig()
	c.Layers, c.DType, c.Mix = 8, swarm.DTypeQ4_K, MixQ4_K_M
	var more []int
	for b := range c.Layers {
		v, down, q := c.tensorDType(c.blockTensor(b, kWV)), c.tensorDType(c.blockTensor(b, kW2)), c.tensorDType(c.blockTensor(b, kWQ))
		require.Equal(t, v, down, "block %d", b)
		require.Equal(t, swarm.DTypeQ4_K, q, "block %d", b)
		if v == swarm.DTypeQ6_K {
			more = append(more, b)
		}
	}
	require.Equal(t, []int{0, 3, 6, 7}, more)
	require.Equal(t, swarm.DTypeQ6_K, c.tensorDType(c.globalTensor(kOutput)))
	require.Equal(t, swarm.DTypeQ4_K, c.tensorDType(c.globalTensor(kEmbed)))
	dt, mix, err := ParseDType("Q4_K_M")
	require.NoError(t, err)
	require.Equal(t, swarm.DTypeQ4_K, dt)
	require.Equal(t, MixQ4_K_M, mix)
	_, _, err = ParseDType("q4_k_s")
	require.ErrorIs(t, err, swarm.ErrBadDType)
	require.ErrorContains(t, err, "or the mix q4_k_m")
	c.Dim = 128
	require.ErrorContains(t, c.Validate(), "q4_k needs dim, ffn and heads*head dim multiples of 256, got 128")
}
