package blocks

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	gguf "github.com/gpustack/gguf-parser-go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// quantTypes are the quantized dtypes computed through dequantizers (all
// but Q8_0, which has its own kernels).
var quantTypes = []swarm.DType{swarm.DTypeQ4_0, swarm.DTypeQ4_1, swarm.DTypeQ5_0, swarm.DTypeQ5_1,
	swarm.DTypeQ2_K, swarm.DTypeQ3_K, swarm.DTypeQ4_K, swarm.DTypeQ5_K, swarm.DTypeQ6_K,
	swarm.DTypeIQ4_NL, swarm.DTypeIQ4_XS}

// halfFields are the byte offsets of the f16 scales (d, and dmin or m) in
// each block type (ggml-common.h).
var halfFields = map[swarm.DType][]int{
	swarm.DTypeQ4_0: {0}, swarm.DTypeQ4_1: {0, 2}, swarm.DTypeQ5_0: {0}, swarm.DTypeQ5_1: {0, 2},
	swarm.DTypeQ2_K: {80, 82}, swarm.DTypeQ3_K: {108}, swarm.DTypeQ4_K: {0, 2}, swarm.DTypeQ5_K: {0, 2},
	swarm.DTypeQ6_K: {208}, swarm.DTypeIQ4_NL: {0}, swarm.DTypeIQ4_XS: {0},
}

// randomBlocks fills q with blocks of dt: random bits, but finite f16
// scales of about 1/64 (so that values are O(1)).
func randomBlocks(rng *rand.Rand, q []byte, dt swarm.DType) {
	for i := range q {
		q[i] = byte(rng.Uint32())
	}
	bb := int(dt.Bytes(int64(dt.BlockSize())))
	for b := 0; b < len(q); b += bb {
		for _, off := range halfFields[dt] {
			binary.LittleEndian.PutUint16(q[b+off:], f32ToF16(float32(rng.Float64())/64))
		}
	}
}

// TestDTypeLayoutsMatchGGML checks every GGML type the loader accepts
// against gguf-parser-go's type traits (block size and bytes per block),
// the sizes it computes tensor extents with, and that each quantized type
// has a dequantizer.
func TestDTypeLayoutsMatchGGML(t *testing.T) {
	require.Len(t, ggmlDTypes, 15)
	for gt, d := range ggmlDTypes {
		tr, ok := gt.Trait()
		require.True(t, ok, "%v", gt)
		require.Equal(t, int(tr.BlockSize), d.BlockSize(), "%v", gt)
		require.Equal(t, int64(tr.TypeSize), d.Bytes(int64(d.BlockSize())), "%v", gt)
		require.Equal(t, tr.Quantized, d.Quantized(), "%v", gt)
		if d.Quantized() {
			require.Contains(t, dequantizers, d, "%v", gt)
		}
	}
	_, err := newMatrix(2, 100, swarm.DTypeQ4_K)
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "q4_k row of 100 elements, want a multiple of its block size 256")
	require.Equal(t, swarm.DTypeQ4_K, ggmlDTypes[gguf.GGMLTypeQ4_K])
}
