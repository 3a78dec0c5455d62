package swarm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestDTypeNames round-trips every dtype through its name, upper case
// included, and rejects unknown names naming the valid ones.
func TestDTypeNames(t *testing.T) {
	for d := swarm.DTypeF32; d <= swarm.DTypeIQ4_XS; d++ {
		for _, name := range []string{d.String(), " " + d.String(), upper(d.String())} {
			got, err := swarm.ParseDType(name)
			require.NoError(t, err, name)
			require.Equal(t, d, got, name)
		}
		b, err := d.MarshalText()
		require.NoError(t, err)
		var back swarm.DType
		require.NoError(t, back.UnmarshalText(b))
		require.Equal(t, d, back)
	}
	_, err := swarm.ParseDType("q4_k_m")
	require.ErrorIs(t, err, swarm.ErrBadDType)
	require.ErrorContains(t, err, "q4_k, q5_k, q6_k, iq4_nl, iq4_xs")
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// TestDTypeBytes checks per-row byte counts against the block sizes of
// ggml-common.h's static_asserts (sizeof(block_q4_K) == 2*2 + 12 + 256/2,
// ...) and the rejection of rows that are not whole blocks.
func TestDTypeBytes(t *testing.T) {
	for _, c := range []struct {
		d          swarm.DType
		n, bytes   int64
		blockSize  int
		badRowSize int64
	}{
		{swarm.DTypeF32, 3, 12, 1, -1},
		{swarm.DTypeBF16, 3, 6, 1, -1},
		{swarm.DTypeQ8_0, 64, 2 * (2 + 32), 32, 48},
		{swarm.DTypeQ4_0, 64, 2 * (2 + 16), 32, 16},
		{swarm.DTypeQ4_1, 64, 2 * (4 + 16), 32, 40},
		{swarm.DTypeQ5_0, 64, 2 * (2 + 4 + 16), 32, 33},
		{swarm.DTypeQ5_1, 64, 2 * (4 + 4 + 16), 32, 100},
		{swarm.DTypeQ2_K, 512, 2 * (16 + 64 + 4), 256, 128},
		{swarm.DTypeQ3_K, 512, 2 * (32 + 64 + 12 + 2), 256, 288},
		{swarm.DTypeQ4_K, 4096, 16 * (4 + 12 + 128), 256, 4000},
		{swarm.DTypeQ5_K, 256, 4 + 12 + 32 + 128, 256, 32},
		{swarm.DTypeQ6_K, 11008, 43 * (128 + 64 + 16 + 2), 256, 11000},
		{swarm.DTypeIQ4_NL, 96, 3 * (2 + 16), 32, 16},
		{swarm.DTypeIQ4_XS, 256, 2 + 2 + 4 + 128, 256, 96},
	} {
		require.Equal(t, c.bytes, c.d.Bytes(c.n), "%v", c.d)
		require.Equal(t, c.blockSize, c.d.BlockSize(), "%v", c.d)
		require.Equal(t, c.blockSize > 1, c.d.Quantized(), "%v", c.d)
		require.NoError(t, c.d.CheckRow(c.n), "%v", c.d)
		if c.badRowSize > 0 {
			err := c.d.CheckRow(c.badRowSize)
			require.ErrorIs(t, err, swarm.ErrBadDType)
			require.ErrorContains(t, err, "want a multiple of its block size")
		}
	}
	require.Zero(t, swarm.DTypeInvalid.Bytes(10))
	require.ErrorIs(t, swarm.DTypeInvalid.CheckRow(10), swarm.ErrBadDType)
}
