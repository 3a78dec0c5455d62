package servertest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// ModelConfig is the model NewModel synthesizes for the data-plane tests:
// 6 blocks, d_model 16, 4 heads over 2 KV heads, FFN 32, vocab 320, f32
// weights, a context of 40 tokens, seed 1.
//
// It is this small on purpose: every engine call of a session of its whole
// context stays below blocks' parallel threshold (see fitsInline), so no
// work goes to blocks' process-wide compute pool, whose workers live
// outside any synctest bubble.
func ModelConfig() synth.Config {
	c := synth.DefaultConfig()
	c.Layers, c.Dim, c.FFN, c.Heads, c.KVHeads, c.MaxSeqLen, c.Seed = 6, 16, 32, 4, 2, 40, 1
	return c
}

// Model is a synthesized model written to a temporary directory as GGUF,
// with its head (the client side) and a local engine over all its blocks:
// the single-process reference a chain of servers must reproduce exactly
// (with f32 hidden states on the wire).
type Model struct {
	// Path is the GGUF file, what server.Config.Model takes.
	Path string

	info   swarm.ModelInfo
	head   blocks.Head
	engine blocks.Engine // all blocks
}

// NewModel synthesizes cfg (ModelConfig, or a variant of it), loads its
// head and a local engine, and runs one token through the engine.
//
// Call it outside any synctest bubble: the first engine call of a process
// starts blocks' compute pool, whose goroutines must not belong to a
// bubble (they outlive it). It fails the test for a cfg whose sessions
// would hand work to that pool (fitsInline).
func NewModel(tb testing.TB, cfg synth.Config) *Model {
	tb.Helper()
	require.NoError(tb, fitsInline(cfg))
	path := filepath.Join(tb.TempDir(), "synth.gguf")
	require.NoError(tb, synth.WriteGGUF(path, cfg))
	bm, err := blocks.Open(path)
	require.NoError(tb, err)
	defer bm.Close()
	head, err := bm.LoadHead()
	require.NoError(tb, err)
	engine, err := bm.LoadSpan(bm.Info().Blocks())
	require.NoError(tb, err)
	tb.Cleanup(func() { engine.Close() })
	m := &Model{Path: path, info: bm.Info(), head: head, engine: engine}
	warm := m.Session(tb, m.info.Blocks(), 1)
	x, err := head.Embed([]int{m.info.BOS})
	require.NoError(tb, err)
	_, err = warm.Forward(context.Background(), 0, x, 1)
	require.NoError(tb, err)
	return m
}

// Info describes the model.
func (m *Model) Info() swarm.ModelInfo { return m.info }

// Head is the model's client side, for client.New.
func (m *Model) Head() blocks.Head { return m.head }

// Session opens a local session over the blocks of span for up to
// maxLength tokens: the reference outputs of a chain, or of one server's
// part of it. Cleanup closes it.
func (m *Model) Session(tb testing.TB, span swarm.Span, maxLength int) blocks.Session {
	tb.Helper()
	s, err := m.engine.NewSession(span, maxLength)
	require.NoError(tb, err)
	tb.Cleanup(func() { s.Close() })
	return s
}

// inlineWork is the work, in multiply-adds, below which blocks runs an
// engine call on the caller's goroutine: 2 * parallelGrain in
// blocks/parallel.go.
const inlineWork = 1 << 16

// fitsInline checks that no engine call of a session of cfg's whole
// context reaches inlineWork in any of the engine's parallel loops
// (blocks/block.go: the q/k/v and output projections, attention, the
// SwiGLU and down projections, for n tokens at once with n + pos up to
// the context). Above it, blocks hands chunks to its compute pool, whose
// workers live outside any bubble and close a channel the bubbled caller
// waits on, a fatal error in a synctest bubble.
func fitsInline(cfg synth.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l, d, ffn := cfg.MaxSeqLen, cfg.Dim, cfg.FFN
	hd := d / cfg.Heads
	q, kv := cfg.Heads*hd, cfg.KVHeads*hd
	for _, loop := range []struct {
		name string
		work int
	}{
		{"q/k/v projections", (q + 2*kv) * l * d},
		{"output projection", d * l * q},
		{"attention", l * cfg.Heads * 2 * l * hd},
		{"SwiGLU", ffn * 2 * l * d},
		{"down projection", d * l * ffn},
	} {
		if loop.work >= inlineWork {
			return fmt.Errorf("servertest: model %+v: the %s of %d tokens is %d multiply-adds, at or above blocks' parallel threshold of %d: "+
				"its work would go to the compute pool outside the synctest bubble (shrink the dims or MaxSeqLen)", cfg, loop.name, l, loop.work, inlineWork)
		}
	}
	return nil
}
