package blocks_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// WidenRows on values worked out by hand: f32 as stored, binary16 and
// bfloat16 bit patterns, and one Q8_0 block (d = 0.5 as f16 0x3800).
func TestWidenRows(t *testing.T) {
	f32 := make([]byte, 8)
	binary.LittleEndian.PutUint32(f32, math.Float32bits(1.5))
	binary.LittleEndian.PutUint32(f32[4:], math.Float32bits(-2))
	q8 := make([]byte, 34)
	binary.LittleEndian.PutUint16(q8, 0x3800)
	want8 := make([]float32, 32)
	for j := range 32 {
		q8[2+j] = byte(int8(j - 16))
		want8[j] = 0.5 * float32(j-16)
	}
	for _, c := range []struct {
		dt   swarm.DType
		raw  []byte
		cols int
		want []float32
	}{
		{swarm.DTypeF32, f32, 2, []float32{1.5, -2}},
		{swarm.DTypeF16, []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b}, 2, []float32{1, -2, 0.5, 65504}},
		{swarm.DTypeBF16, []byte{0x80, 0x3f, 0x40, 0xc0}, 1, []float32{1, -3}},
		{swarm.DTypeQ8_0, q8, 32, want8},
	} {
		t.Run(c.dt.String(), func(t *testing.T) {
			got := make([]float32, len(c.want))
			require.NoError(t, blocks.WidenRows(c.dt, c.raw, c.cols, got))
			require.Equal(t, c.want, got)
		})
	}
	err := blocks.WidenRows(swarm.DTypeF16, []byte{1, 2, 3}, 1, make([]float32, 2))
	require.ErrorIs(t, err, blocks.ErrArgument)
	err = blocks.WidenRows(swarm.DTypeF16, []byte{1, 2, 3, 4}, 2, make([]float32, 1))
	require.ErrorIs(t, err, blocks.ErrArgument)
}

// The RoPE table gives cos and sin of pos * theta^(-2i/headDim) (RoFormer
// eq. 34), and the sliding blocks' own base when the model has one.
func TestRoPETable(t *testing.T) {
	info := swarm.ModelInfo{HeadDim: 8, RopeTheta: 10000, SlidingWindow: 4}
	tab, err := blocks.NewRoPETable(info, blocks.BlockConfig{SlidingTheta: 100})
	require.NoError(t, err)
	cos, sin := make([]float32, 4), make([]float32, 4)
	for _, c := range []struct {
		sliding bool
		theta   float64
	}{{false, 10000}, {true, 100}} {
		tab.Angles(7, c.sliding, cos, sin)
		for i := range 4 {
			a := 7 * math.Pow(c.theta, -float64(2*i)/8)
			require.InDelta(t, math.Cos(a), cos[i], 1e-6)
			require.InDelta(t, math.Sin(a), sin[i], 1e-6)
		}
	}
	_, err = blocks.NewRoPETable(swarm.ModelInfo{HeadDim: 8, RopeTheta: 10000, RopeScaling: &swarm.RopeScaling{Type: "yarn"}}, blocks.BlockConfig{})
	require.ErrorIs(t, err, blocks.ErrFormat)
}
