package blocks_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// TestSpanTensorsAgreeAcrossFormats opens every architecture's synthesized
// model as a Hugging Face directory and as GGUF and requires the same
// neutral tensor directory from both: the same tensors present, shapes,
// dtypes, bytes row by row and vectors. The two files store q/k rows in
// different RoPE orders (HF rotate-half; GGUF adjacent pairs for llama,
// rotate-half for the NeoX families) and Gemma's norms differently (w vs
// 1 + w), so this checks the readers' normalisation against each other.
func TestSpanTensorsAgreeAcrossFormats(t *testing.T) {
	for _, arch := range synth.Archs {
		t.Run(arch, func(t *testing.T) {
			c := smallConfig(swarm.DTypeF32)
			c.Arch = arch
			paths := synthFiles(t, c)
			span := swarm.Span{Start: 1, End: 3}
			dirs := map[string]blocks.SpanTensors{}
			for _, f := range []string{"hf", "gguf"} {
				m, err := blocks.Open(paths[f])
				require.NoError(t, err, f)
				t.Cleanup(func() { _ = m.Close() })
				st, err := m.SpanTensors(span)
				require.NoError(t, err, f)
				dirs[f] = st
			}
			hf, gg := dirs["hf"], dirs["gguf"]
			assert.Equal(t, hf.Config(), gg.Config())
			present := 0
			for b := span.Start; b < span.End; b++ {
				for slot := range blocks.NumSlots {
					ht, hok := hf.Tensor(b, slot)
					gt, gok := gg.Tensor(b, slot)
					require.Equal(t, hok, gok, "block %d slot %d present", b, slot)
					if !hok {
						continue
					}
					present++
					require.Equal(t, [3]any{ht.DType, ht.Rows, ht.Cols}, [3]any{gt.DType, gt.Rows, gt.Cols}, "block %d %s", b, ht.Name)
					if slot.IsMatrix() {
						require.True(t, bytes.Equal(readAll(t, hf, b, slot), readAll(t, gg, b, slot)), "block %d %s vs %s", b, ht.Name, gt.Name)
						continue
					}
					hv, err := hf.Vector(b, slot)
					require.NoError(t, err)
					gv, err := gg.Vector(b, slot)
					require.NoError(t, err)
					require.Equal(t, hv, gv, "block %d %s", b, ht.Name)
				}
				_, ok := hf.Tensor(0, blocks.SlotWQ)
				assert.False(t, ok, "block 0 lies outside the span")
				err := gg.ReadRows(0, blocks.SlotWQ, func(int, []byte) error { return nil })
				assert.ErrorIs(t, err, blocks.ErrArgument)
			}
			assert.GreaterOrEqual(t, present, 2*9, "a block has at least Llama's nine tensors")
		})
	}
}

// readAll concatenates a matrix's rows as ReadRows streams them, checking
// that chunks arrive in order and hold whole rows.
func readAll(t *testing.T, st blocks.SpanTensors, b int, slot blocks.Slot) []byte {
	t.Helper()
	ti, _ := st.Tensor(b, slot)
	var out []byte
	next := 0
	require.NoError(t, st.ReadRows(b, slot, func(row0 int, raw []byte) error {
		require.Equal(t, next, row0)
		require.Zero(t, len(raw)%ti.RowBytes())
		next += len(raw) / ti.RowBytes()
		out = append(out, raw...)
		return nil
	}))
	require.Equal(t, ti.Rows, next)
	require.Equal(t, ti.Bytes(), int64(len(out)))
	return out
}

// TestBackendRegistry: the CPU backend is registered and the default, an
// unknown name is refused with the available ones listed, a name cannot be
// taken twice.
func TestBackendRegistry(t *testing.T) {
	b, err := blocks.LookupBackend("")
	require.NoError(t, err)
	assert.Equal(t, "cpu", b.Name())
	assert.Equal(t, swarm.DTypeF32, b.CacheDType())
	assert.Contains(t, blocks.BackendNames(), "cpu")

	_, err = blocks.LookupBackend("cuda-nope")
	require.ErrorIs(t, err, blocks.ErrArgument)
	assert.ErrorContains(t, err, `backend "cuda-nope" is not available (available: cpu`)

	require.ErrorIs(t, blocks.RegisterBackend(blocks.CPU()), blocks.ErrArgument)
}

// countingBackend builds CPU engines through a SpanTensors that counts the
// bytes read: the interface is all a backend needs, and a span reads only
// its own tensors.
type countingBackend struct{ read *int64 }

func (countingBackend) Name() string            { return "counting" }
func (countingBackend) CacheDType() swarm.DType { return swarm.DTypeF32 }
func (c countingBackend) NewEngine(t blocks.SpanTensors) (blocks.Engine, error) {
	return blocks.CPU().NewEngine(countingTensors{t, c.read})
}

type countingTensors struct {
	blocks.SpanTensors
	read *int64
}

func (c countingTensors) ReadRows(b int, slot blocks.Slot, fn func(int, []byte) error) error {
	return c.SpanTensors.ReadRows(b, slot, func(r int, raw []byte) error {
		*c.read += int64(len(raw))
		return fn(r, raw)
	})
}

// TestLoadSpanWithBackend: an engine built by another backend through the
// interface computes what LoadSpan's does, reads exactly the span's matrix
// bytes, and carries its backend's attention-cache size per token.
func TestLoadSpanWithBackend(t *testing.T) {
	c := smallConfig(swarm.DTypeF16)
	c.Arch = synth.ArchQwen3
	paths := synthFiles(t, c)
	m, err := blocks.Open(paths["gguf"])
	require.NoError(t, err)
	defer m.Close()
	span := swarm.Span{Start: 1, End: 3}

	var read int64
	e, err := m.LoadSpanWith(countingBackend{&read}, span)
	require.NoError(t, err)
	defer e.Close()
	ref, err := m.LoadSpan(span)
	require.NoError(t, err)
	defer ref.Close()

	info := m.Info()
	q, kv := info.NHeads*info.HeadDim, info.NKVHeads*info.HeadDim
	// q, k, v, o and the three FFN matrices, f16: 2 bytes a weight.
	perBlock := int64(2 * (q*info.DModel + 2*kv*info.DModel + info.DModel*q + 3*info.FFNDim*info.DModel))
	assert.Equal(t, 2*perBlock, read)
	assert.Equal(t, int64(2*kv*4), e.Info().CacheBytesPerToken, "float32 K and V")

	hidden := make([]float32, 3*info.DModel)
	for i := range hidden {
		hidden[i] = float32(i%13)/13 - 0.5
	}
	out := map[string][]float32{}
	for name, eng := range map[string]blocks.Engine{"counting": e, "cpu": ref} {
		s, err := eng.NewSession(span, 8)
		require.NoError(t, err)
		out[name], err = s.Forward(t.Context(), 0, hidden, 3)
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	require.Equal(t, out["cpu"], out["counting"])
	require.True(t, errors.Is(e.Close(), nil))
}
