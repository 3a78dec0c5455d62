package wire_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// FuzzDecode feeds arbitrary bytes to Unmarshal and Decode. Neither may
// panic, and whatever decodes must re-encode: byte for byte for frames
// without f16/bf16 hidden states (decoding is canonical), and to a fixed
// point after one round for those (a NaN's payload may be quietened). The
// seed corpus is testdata/golden plus testdata/fuzz/FuzzDecode.
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 3m ./swarm/wire/
func FuzzDecode(f *testing.F) {
	golden, err := filepath.Glob(filepath.Join("testdata", "golden", "*.hex"))
	require.NoError(f, err)
	for _, path := range golden {
		f.Add(readHex(f, path))
	}
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := wire.Unmarshal(data, limit)
		streamed, streamErr := wire.Decode(bytes.NewReader(data), limit)
		if err != nil {
			require.Nil(t, fr)
			return
		}
		require.NoError(t, streamErr, "Decode fails where Unmarshal succeeds")

		b1, err := wire.Marshal(fr)
		require.NoError(t, err, "a decoded frame must encode: %#v", fr)
		bs, err := wire.Marshal(streamed)
		require.NoError(t, err)
		require.Equal(t, b1, bs, "Decode and Unmarshal agree (compared as bytes: NaN != NaN)")
		if !lossyTensor(fr) {
			require.Equal(t, data, b1, "decoding is canonical")
		}
		fr2, err := wire.Unmarshal(b1, limit)
		require.NoError(t, err)
		b2, err := wire.Marshal(fr2)
		require.NoError(t, err)
		require.Equal(t, b1, b2, "re-encoding reaches a fixed point")
	})
}

// lossyTensor reports whether f carries f16 or bf16 hidden states, whose
// NaNs come back quietened from a float32 round trip.
func lossyTensor(f wire.Frame) bool {
	var h wire.Hidden
	switch f := f.(type) {
	case *wire.Step:
		h = f.Hidden
	case *wire.Result:
		h = f.Hidden
	default:
		return false
	}
	return h.DType != swarm.DTypeF32
}
