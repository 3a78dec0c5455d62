package wire_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// TestBF16RoundToNearestEven checks the float32 -> bfloat16 rounding on bit
// patterns worked out by hand: bfloat16 keeps the top 16 bits, so the low 16
// bits decide: below 0x8000 down, above up, exactly 0x8000 to the even one.
func TestBF16RoundToNearestEven(t *testing.T) {
	tests := []struct {
		name string
		in   uint32
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"below half", 0x3f807fff, 0x3f80},
		{"tie to even (down)", 0x3f808000, 0x3f80},
		{"tie to even (up)", 0x3f818000, 0x3f82},
		{"above half", 0x3f808001, 0x3f81},
		{"max float32 overflows to +Inf", 0x7f7fffff, 0x7f80},
		{"-max float32 overflows to -Inf", 0xff7fffff, 0xff80},
		{"+Inf", 0x7f800000, 0x7f80},
		{"signaling NaN stays NaN", 0x7f800001, 0x7fc0},
		{"negative quiet NaN", 0xffc00000, 0xffc0},
		{"-0", 0x80000000, 0x8000},
		{"smallest subnormal to 0", 0x00000001, 0x0000},
		{"largest subnormal rounds up", 0x007fffff, 0x0080},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wire.BF16FromFloat32(math.Float32frombits(tt.in))
			require.Equalf(t, tt.want, got, "bf16(%#08x) = %#04x, want %#04x", tt.in, got, tt.want)
		})
	}
	require.Equal(t, uint32(0x3f810000), math.Float32bits(wire.Float32FromBF16(0x3f81)))
}

func TestAppendTensorEncodings(t *testing.T) {
	tests := []struct {
		name string
		dt   swarm.DType
		in   []float32
		want []uint32 // element bit patterns, little-endian on the wire
	}{
		{"f32 exact", swarm.DTypeF32, []float32{1, -0.5, float32(math.Inf(-1))}, []uint32{0x3f800000, 0xbf000000, 0xff800000}},
		{"f16 exact", swarm.DTypeF16, []float32{1, -2, 65504, 0x1p-24}, []uint32{0x3c00, 0xc000, 0x7bff, 0x0001}},
		// 1+2^-11 is halfway between 1 (0x3c00) and 1+2^-10 (0x3c01): even is 0x3c00.
		// 1+3*2^-11 is halfway between 0x3c01 and 0x3c02: even is 0x3c02.
		// 65520 is halfway between 65504 and 65536 (which overflows): even is +Inf.
		// 2^-25 is halfway between 0 and 2^-24: even is 0.
		{"f16 ties to even", swarm.DTypeF16, []float32{1 + 0x1p-11, 1 + 3*0x1p-11, 65520, 0x1p-25}, []uint32{0x3c00, 0x3c02, 0x7c00, 0x0000}},
		{"bf16", swarm.DTypeBF16, []float32{1, -2, 3.140625, math.Float32frombits(0x3f818000)}, []uint32{0x3f80, 0xc000, 0x4049, 0x3f82}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte{0xaa}
			b, err := wire.AppendTensor(prefix, tt.dt, tt.in)
			require.NoError(t, err)
			require.Equal(t, byte(0xaa), b[0], "appends after dst")
			b = b[1:]
			k := int(tt.dt.Bytes(1))
			require.Len(t, b, k*len(tt.in))
			for i, want := range tt.want {
				var got uint32
				if k == 4 {
					got = binary.LittleEndian.Uint32(b[4*i:])
				} else {
					got = uint32(binary.LittleEndian.Uint16(b[2*i:]))
				}
				require.Equalf(t, want, got, "element %d: %#x, want %#x", i, got, want)
			}
		})
	}
}

func TestDecodeTensor(t *testing.T) {
	f16 := []byte{0x01, 0x00, 0x00, 0x7c, 0x00, 0xfc, 0x00, 0x7e, 0x00, 0x80}
	got, err := wire.DecodeTensor(nil, swarm.DTypeF16, f16)
	require.NoError(t, err)
	require.Equal(t, float32(0x1p-24), got[0])
	require.True(t, math.IsInf(float64(got[1]), 1))
	require.True(t, math.IsInf(float64(got[2]), -1))
	require.True(t, math.IsNaN(float64(got[3])))
	require.Equal(t, uint32(0x80000000), math.Float32bits(got[4]), "-0 keeps its sign")

	// dst is reused when it has room.
	dst := make([]float32, 0, 16)
	got, err = wire.DecodeTensor(dst, swarm.DTypeBF16, []byte{0x80, 0x3f, 0x00, 0xc0})
	require.NoError(t, err)
	require.Equal(t, []float32{1, -2}, got)
	require.Same(t, &dst[:1][0], &got[0])

	_, err = wire.DecodeTensor(nil, swarm.DTypeF16, []byte{1, 2, 3})
	require.ErrorIs(t, err, wire.ErrBadTensor)
	require.ErrorContains(t, err, "3 bytes is not a whole number of f16 elements")
	_, err = wire.DecodeTensor(nil, swarm.DTypeQ8_0, make([]byte, 34))
	require.ErrorIs(t, err, wire.ErrBadTensor)
	_, err = wire.AppendTensor(nil, swarm.DTypeInvalid, []float32{1})
	require.ErrorIs(t, err, wire.ErrBadTensor)
}

// TestTensorRoundTripError bounds the error of a round trip through each
// dtype by half a unit in the last place: 2^-11 relative for f16 (10
// mantissa bits), 2^-8 for bf16 (7 bits), exact for f32.
func TestTensorRoundTripError(t *testing.T) {
	in := make([]float32, 4096)
	for i := range in {
		in[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%50) // [-50, 50], normal in f16
	}
	for _, tt := range []struct {
		dt     swarm.DType
		relTol float64
	}{{swarm.DTypeF32, 0}, {swarm.DTypeF16, 0x1p-11}, {swarm.DTypeBF16, 0x1p-8}} {
		b, err := wire.AppendTensor(nil, tt.dt, in)
		require.NoError(t, err)
		out, err := wire.DecodeTensor(nil, tt.dt, b)
		require.NoError(t, err)
		require.Len(t, out, len(in))
		for i := range in {
			if in[i] == 0 {
				require.Zero(t, out[i], "%s element %d", tt.dt, i)
				continue // the relative error of 0 is undefined
			}
			rel := math.Abs(float64(out[i]-in[i])) / math.Abs(float64(in[i]))
			require.LessOrEqualf(t, rel, tt.relTol, "%s element %d: %g -> %g", tt.dt, i, in[i], out[i])
		}
	}
}

// TestFirstNonFinite finds the first NaN or infinity, and only those.
func TestFirstNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		x    []float32
		want int
	}{
		{nil, -1},
		{[]float32{0, -1, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}, -1},
		{[]float32{1, nan}, 1},
		{[]float32{inf, nan}, 0},
		{[]float32{1, 2, -inf}, 2},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, wire.FirstNonFinite(tt.x), "%v", tt.x)
	}
}
