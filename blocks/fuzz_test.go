package blocks

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
)

// The fuzz targets check that the header parsers never panic and that every
// failure wraps ErrFormat. `go test` runs only their seeds; fuzz with e.g.
// go test -run '^$' -fuzz FuzzOpenGGUF -fuzztime 30s ./blocks/

func FuzzLlama2CHeader(f *testing.F) {
	v0 := make([]byte, 28)
	for i, x := range []int32{64, 172, 5, 8, 4, 512, 512} {
		binary.LittleEndian.PutUint32(v0[4*i:], uint32(x))
	}
	f.Add(v0)
	v1 := append(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, llama2cMagic), 1), v0...)
	f.Add(append(v1, make([]byte, 256-len(v1))...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseLlama2CHeader(b)
		if err != nil {
			return
		}
		require.Positive(t, h.dim)
		require.Positive(t, h.vocab)
		require.Zero(t, h.dim%h.heads)
		require.Zero(t, h.heads%h.kvHeads)
	})
}

func FuzzSafetensorsHeader(f *testing.F) {
	f.Add([]byte(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"format":"pt"}}`), int64(16))
	f.Add([]byte(`{"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}}`), int64(4))
	f.Add([]byte(`{"a":{"dtype":"BF16","shape":[4611686018427387904,4],"data_offsets":[0,6]}}`), int64(6))
	f.Add([]byte(`[]`), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		ts, err := parseSafetensorsHeader(b, size)
		if err != nil {
			return
		}
		for name, st := range ts {
			require.LessOrEqual(t, st.DataOffsets[1], size, name)
			require.LessOrEqual(t, st.DataOffsets[0], st.DataOffsets[1], name)
		}
	})
}

// fuzzSeedModel writes a tiny model in one format and returns its bytes.
func fuzzSeedModel(f *testing.F, write func(path string, c synth.Config) error) []byte {
	c := synth.DefaultConfig()
	c.Layers, c.Dim, c.FFN, c.Heads, c.KVHeads, c.Vocab, c.MaxSeqLen = 1, 32, 32, 2, 1, 259, 8
	p := filepath.Join(f.TempDir(), "seed")
	require.NoError(f, write(p, c))
	b, err := os.ReadFile(p)
	require.NoError(f, err)
	return b
}

// fuzzOpen writes b to a file named name and opens it: any error must wrap
// ErrFormat, and a model that opens must load.
func fuzzOpen(t *testing.T, name string, b []byte) {
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	m, err := Open(p)
	if err != nil {
		require.True(t, errors.Is(err, ErrFormat), "%v", err)
		return
	}
	defer m.Close()
	_, err = m.LoadSpan(m.Info().Blocks())
	require.NoError(t, err)
}

func FuzzOpenGGUF(f *testing.F) {
	seed := fuzzSeedModel(f, synth.WriteGGUF)
	f.Add(seed)
	f.Add(seed[:len(seed)/3])
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzOpen(t, "m.gguf", b) })
}

func FuzzOpenLlama2C(f *testing.F) {
	seed := fuzzSeedModel(f, func(p string, c synth.Config) error { return synth.WriteLlama2C(p, c, 0) })
	f.Add(seed)
	f.Add(seed[:100])
	seed1 := fuzzSeedModel(f, func(p string, c synth.Config) error { return synth.WriteLlama2C(p, c, 1) })
	f.Add(seed1)
	f.Fuzz(func(t *testing.T, b []byte) { fuzzOpen(t, "m.bin", b) })
}
