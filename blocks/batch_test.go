package blocks_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// requireBits requires got to equal want bit for bit.
func requireBits(t *testing.T, want, got []float32, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, got, len(want), msgAndArgs...)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			require.Failf(t, "values differ", "index %d: want %v, got %v", append([]any{i, want[i], got[i]}, msgAndArgs...)...)
		}
	}
}

// batchCase is one session of TestForwardBatchBitIdentical: its sub-span,
// its prompt, the decode tokens that follow it, and its max length (0:
// 32).
type batchCase struct {
	span      swarm.Span
	prompt    []int
	decode    []int
	maxLength int
}

// ids returns n token ids from start, below vocab.
func ids(start, n, vocab int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (start + 3*i) % vocab
	}
	return out
}

// TestForwardBatchBitIdentical runs sessions with different sub-spans,
// prompt lengths and decode steps, first each alone through Session.Forward,
// then all together through ForwardBatch (prefill chunks mixed with decode
// steps of the others, in batches whose composition changes every step),
// and requires every output bit for bit equal, for every weight dtype and
// every architecture (every GGML quantized type and the q4_k_m mix for
// llama; gemma3's sliding blocks with a window shorter than
// the sessions; the last two sessions are long enough for ring caches,
// swarm.SlidingRewind, one with a prefill longer than its rings, one
// wrapping its rings during batched decode steps, next to sessions with
// full caches).
func TestForwardBatchBitIdentical(t *testing.T) {
	type tc struct {
		arch  string
		dtype string // a --dtype name: a dtype or a mix
	}
	var tcs []tc
	quant := quantMixes
	if raceEnabled {
		// The quantized types share one path (a dot product per row, in
		// both Forward and ForwardBatch), and their scalar dequantizing
		// kernels cost seconds per case under the race detector: one type
		// of 32-value blocks and the Q4_K/Q6_K mix there, all without it.
		quant = []string{"q4_0", "q4_k_m"}
	}
	for _, dt := range append([]string{"f32", "f16", "bf16", "q8_0"}, quant...) {
		tcs = append(tcs, tc{synth.ArchLlama, dt})
	}
	for _, arch := range synth.Archs[1:] {
		tcs = append(tcs, tc{arch, "f16"}, tc{arch, "q8_0"})
	}
	for _, tc := range tcs {
		t.Run(tc.arch+"/"+tc.dtype, func(t *testing.T) {
			c := smallConfig(swarm.DTypeF32)
			c.Arch = tc.arch
			var err error
			c.DType, c.Mix, err = synth.ParseDType(tc.dtype)
			require.NoError(t, err)
			c.Dim, c.FFN, c.Heads, c.KVHeads = 64, 160, 4, 2 // quantized rows: multiples of 32; grouped-query attention
			if c.DType.BlockSize() == 256 || c.Mix != "" {
				c.Dim, c.FFN = 256, 512 // whole K-quant super-blocks
			}
			path := filepath.Join(t.TempDir(), "model.gguf")
			require.NoError(t, synth.WriteGGUF(path, c))
			l := load(t, path)
			be, ok := l.engine.(blocks.BatchEngine)
			require.True(t, ok, "the CPU engine implements BatchEngine")
			cases := []batchCase{
				{swarm.Span{Start: 0, End: 3}, []int{1, 5, 9, 13, 17, 21, 25}, []int{2, 3, 4, 5}, 0},
				{swarm.Span{Start: 0, End: 3}, []int{1, 7}, []int{8, 9, 10, 11, 12, 13}, 0},
				{swarm.Span{Start: 1, End: 3}, []int{1, 2, 3, 4}, []int{6, 6, 6}, 0},
				{swarm.Span{Start: 0, End: 1}, []int{3}, []int{4, 5, 6, 7, 8}, 0},
				{swarm.Span{Start: 0, End: 3}, []int{1, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}, []int{40}, 0},
				{swarm.Span{Start: 0, End: 3}, ids(5, 80, c.Vocab), ids(9, 6, c.Vocab), 100},
				{swarm.Span{Start: 1, End: 3}, ids(2, 3, c.Vocab), ids(11, 90, c.Vocab), 100},
			}
			want := make([][][]float32, len(cases))
			for i, bc := range cases {
				s, err := l.engine.NewSession(bc.span, bc.lengthOr32())
				require.NoError(t, err)
				for _, in := range stepsOf(t, l, bc) {
					y, err := s.Forward(context.Background(), in.Pos, in.Hidden, in.NTokens)
					require.NoError(t, err)
					want[i] = append(want[i], y)
				}
				require.NoError(t, s.Close())
			}

			// All together: session i starts at round i, so prefills
			// overlap the decode steps of the sessions before.
			sessions := make([]blocks.Session, len(cases))
			steps := make([][]blocks.Step, len(cases))
			for i, bc := range cases {
				var err error
				sessions[i], err = l.engine.NewSession(bc.span, bc.lengthOr32())
				require.NoError(t, err)
				steps[i] = stepsOf(t, l, bc)
			}
			got := make([][][]float32, len(cases))
			for round := 0; ; round++ {
				var batch []blocks.Step
				var who []int
				for i := range cases {
					k := round - i
					if k >= 0 && k < len(steps[i]) {
						st := steps[i][k]
						st.Session = sessions[i]
						batch = append(batch, st)
						who = append(who, i)
					}
				}
				if len(batch) == 0 && round > len(cases) {
					break
				}
				for j, r := range be.ForwardBatch(context.Background(), batch) {
					require.NoError(t, r.Err)
					got[who[j]] = append(got[who[j]], r.Hidden)
				}
			}
			for i := range cases {
				require.Len(t, got[i], len(want[i]))
				for k := range want[i] {
					requireBits(t, want[i][k], got[i][k], "session %d step %d", i, k)
				}
				require.Equal(t, len(cases[i].prompt)+len(cases[i].decode), sessions[i].Len())
			}
		})
	}
}

// lengthOr32 is the case's max length, 32 by default.
func (bc batchCase) lengthOr32() int {
	if bc.maxLength > 0 {
		return bc.maxLength
	}
	return 32
}

// stepsOf returns a case's steps without their session: the prompt in one
// prefill, then one decode step per token.
func stepsOf(t *testing.T, l loaded, bc batchCase) []blocks.Step {
	t.Helper()
	x, err := l.head.Embed(bc.prompt)
	require.NoError(t, err)
	steps := []blocks.Step{{Pos: 0, Hidden: x, NTokens: len(bc.prompt)}}
	for k, tok := range bc.decode {
		x, err := l.head.Embed([]int{tok})
		require.NoError(t, err)
		steps = append(steps, blocks.Step{Pos: len(bc.prompt) + k, Hidden: x, NTokens: 1})
	}
	return steps
}

// TestForwardBatchErrors checks that a bad step fails alone: the others of
// its batch still run.
func TestForwardBatchErrors(t *testing.T) {
	l := tinyModel(t)
	be := l.engine.(blocks.BatchEngine)
	x, err := l.head.Embed([]int{1, 2})
	require.NoError(t, err)
	d := l.head.Info().DModel
	good, err := l.engine.NewSession(l.engine.Span(), 4)
	require.NoError(t, err)
	other, err := l.engine.NewSession(l.engine.Span(), 4)
	require.NoError(t, err)
	res := be.ForwardBatch(context.Background(), []blocks.Step{
		{Session: good, Pos: 0, Hidden: x, NTokens: 2},
		{Session: good, Pos: 0, Hidden: x, NTokens: 2},      // twice
		{Session: other, Pos: 3, Hidden: x[:d], NTokens: 1}, // past Len
		{Session: other, Pos: 0, Hidden: x[:d], NTokens: 2}, // short input
		{Session: nil, Pos: 0, Hidden: x[:d], NTokens: 1},   // no session
	})
	require.NoError(t, res[0].Err)
	require.Len(t, res[0].Hidden, 2*d)
	require.ErrorIs(t, res[1].Err, blocks.ErrArgument)
	require.ErrorIs(t, res[2].Err, blocks.ErrPosition)
	require.ErrorIs(t, res[3].Err, blocks.ErrArgument)
	require.ErrorIs(t, res[4].Err, blocks.ErrArgument)
	require.Equal(t, 2, good.Len())
	require.Equal(t, 0, other.Len())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = be.ForwardBatch(ctx, []blocks.Step{{Session: other, Pos: 0, Hidden: x[:d], NTokens: 1}})
	require.ErrorIs(t, res[0].Err, context.Canceled)
}
