package blocks_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// readOnlyFile hides *os.File behind blocks.File so that the model cannot
// map it: every tensor is read into the heap (the path the hub's
// downloading opener takes).
type readOnlyFile struct{ f *os.File }

func (r readOnlyFile) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }
func (r readOnlyFile) Close() error                            { return r.f.Close() }
func (r readOnlyFile) Stat() (os.FileInfo, error)              { return r.f.Stat() }

func openReadOnly(path string) (blocks.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return readOnlyFile{f}, nil
}

// TestMappedWeightsMatchRead loads GGUF files of every stored layout the
// kernels read in place both memory-mapped (the default opener) and read
// into the heap (an opener that is not an *os.File) and requires the same
// logits bit for bit, with all 7 matrices of every block mapped, except
// where q/k rows are permuted on load (qwen2 GGUF: wq and wk are copied).
func TestMappedWeightsMatchRead(t *testing.T) {
	cases := []struct {
		name     string
		c        synth.Config
		perBlock int // matrices mapped per block, by hand
	}{
		{"llama f32", smallConfig(swarm.DTypeF32), 7},
		{"llama f16", smallConfig(swarm.DTypeF16), 7},
		{"llama bf16", smallConfig(swarm.DTypeBF16), 7},
		{"llama q8_0", quantConfig(t, "q8_0"), 7},
		{"llama q4_k", quantConfig(t, "q4_k"), 7},
		{"qwen2 f16 (q/k permuted)", archConfig(synth.ArchQwen2, swarm.DTypeF16), 5},
		{"llama f16 tied", tied(smallConfig(swarm.DTypeF16)), 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := synthFiles(t, tc.c)["gguf"]
			mapped := load(t, path)
			read := load(t, path, blocks.WithOpenFile(openReadOnly))
			require.Equal(t, tc.perBlock*tc.c.Layers, blocks.MappedMatrices(mapped.engine))
			require.Zero(t, blocks.MappedMatrices(read.engine))
			headMats := 2 // embedding and LM head
			if tc.c.Tied {
				headMats = 1
			}
			require.Equal(t, headMats, blocks.HeadMappedMatrices(mapped.head))
			require.Zero(t, blocks.HeadMappedMatrices(read.head))
			require.Equal(t, logitsOf(t, read, testTokens), logitsOf(t, mapped, testTokens))
		})
	}
}

func tied(c synth.Config) synth.Config {
	c.Tied = true
	return c
}

// TestMappedHeadLifetime checks that a head's mapped embedding and LM head
// outlive the Model and that the mapping is let go once the head is
// garbage collected.
func TestMappedHeadLifetime(t *testing.T) {
	path := synthFiles(t, smallConfig(swarm.DTypeF16))["gguf"]
	m, err := blocks.Open(path)
	require.NoError(t, err)
	h, err := m.LoadHead()
	require.NoError(t, err)
	require.Equal(t, 2, blocks.HeadMappedMatrices(h))
	unmapped := blocks.Unmapped(m)
	require.NoError(t, m.Close())
	require.False(t, unmapped(), "the head holds the mapping after Model.Close")
	x, err := h.Embed(testTokens)
	require.NoError(t, err)
	_, err = h.Logits(x[:h.Info().DModel])
	require.NoError(t, err)
	runtime.KeepAlive(h)
	h = nil
	require.Eventually(t, func() bool { runtime.GC(); return unmapped() }, 20*time.Second, 20*time.Millisecond,
		"the mapping is released when the head is collected")
}

// TestMappedEngineLifetime checks that mapped weights outlive the Model
// (closed right after loading, as `swarm serve` does) and that closing
// the engine while sessions step concurrently never reads unmapped memory:
// every Forward either finishes or fails with ErrClosed. Run with -race.
func TestMappedEngineLifetime(t *testing.T) {
	path := synthFiles(t, quantConfig(t, "q8_0"))["gguf"]
	m, err := blocks.Open(path)
	require.NoError(t, err)
	e, err := m.LoadSpan(m.Info().Blocks())
	require.NoError(t, err)
	h, err := m.LoadHead()
	require.NoError(t, err)
	require.NoError(t, m.Close())
	require.Positive(t, blocks.MappedMatrices(e))
	x, err := h.Embed(testTokens)
	require.NoError(t, err)

	s, err := e.NewSession(e.Span(), len(testTokens))
	require.NoError(t, err)
	_, err = s.Forward(context.Background(), 0, x, len(testTokens))
	require.NoError(t, err, "mapped weights must stay valid after Model.Close")

	var wg sync.WaitGroup
	errs := make(chan error, 4*len(testTokens))
	for range 4 {
		s, err := e.NewSession(e.Span(), len(testTokens))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := h.Info().DModel
			for p := range testTokens {
				if _, err := s.Forward(context.Background(), p, x[p*d:(p+1)*d], 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	require.NoError(t, e.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		require.True(t, errors.Is(err, blocks.ErrClosed), "got %v", err)
	}
	require.Zero(t, blocks.MappedMatrices(e))
	_, err = s.Forward(context.Background(), len(testTokens)-1, x[:h.Info().DModel], 1)
	require.ErrorIs(t, err, blocks.ErrClosed)
}
