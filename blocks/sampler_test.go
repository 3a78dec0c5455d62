package blocks_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
)

func TestSamplerValidate(t *testing.T) {
	for _, c := range []blocks.SamplerConfig{
		{Temperature: -1},
		{Temperature: math.NaN()},
		{TopK: -2},
		{TopP: 1.5},
		{TopP: -0.1},
		{RepetitionPenalty: -1},
	} {
		_, err := blocks.NewSampler(c)
		require.ErrorIs(t, err, blocks.ErrArgument, "%+v", c)
	}
	s, err := blocks.NewSampler(blocks.SamplerConfig{})
	require.NoError(t, err)
	_, err = s.Sample(nil, nil)
	require.ErrorIs(t, err, blocks.ErrArgument)
	_, err = s.Sample([]float32{1, float32(math.NaN())}, nil)
	require.ErrorIs(t, err, blocks.ErrArgument)
}

func TestSamplerGreedy(t *testing.T) {
	s, err := blocks.NewSampler(blocks.SamplerConfig{Temperature: 0, TopK: 1, TopP: 0.5})
	require.NoError(t, err)
	tests := []struct {
		logits []float32
		want   int
	}{
		{[]float32{0, 3, 1}, 1},
		{[]float32{5, 5, 1}, 0}, // ties: lowest id, as llama2.c's argmax
		{[]float32{-3, -1, -1}, 1},
	}
	for _, tt := range tests {
		got, err := s.Sample(tt.logits, nil)
		require.NoError(t, err)
		require.Equal(t, tt.want, got, "%v", tt.logits)
	}
}

func TestSamplerRepetitionPenalty(t *testing.T) {
	s, err := blocks.NewSampler(blocks.SamplerConfig{RepetitionPenalty: 2})
	require.NoError(t, err)
	logits := []float32{3, 2, -1}
	// Token 0 was seen (twice): 3/2 = 1.5 < 2, so token 1 wins; the penalty
	// applies once per distinct token.
	got, err := s.Sample(logits, []int{0, 0, 7, -1})
	require.NoError(t, err)
	require.Equal(t, 1, got)
	require.Equal(t, []float32{3, 2, -1}, logits, "logits are not modified")
	// Negative logits are multiplied: token 2 seen: -2 stays below.
	got, err = s.Sample([]float32{-1.5, -3, -1}, []int{2})
	require.NoError(t, err)
	require.Equal(t, 0, got)
}

// TestSamplerDistribution draws many samples at temperature 1 from known
// probabilities and checks the frequencies, and that top-k and top-p cut the
// unlikely tokens; the same seed gives the same draws.
func TestSamplerDistribution(t *testing.T) {
	probs := []float64{0.5, 0.3, 0.15, 0.05}
	logits := make([]float32, len(probs))
	for i, p := range probs {
		logits[i] = float32(math.Log(p))
	}
	const n = 20000
	draw := func(c blocks.SamplerConfig) ([]float64, []int) {
		s, err := blocks.NewSampler(c)
		require.NoError(t, err)
		freq := make([]float64, len(probs))
		var seq []int
		for range n {
			id, err := s.Sample(logits, nil)
			require.NoError(t, err)
			freq[id] += 1.0 / n
			seq = append(seq, id)
		}
		return freq, seq
	}
	freq, seq := draw(blocks.SamplerConfig{Temperature: 1, Seed: 7})
	require.InDeltaSlice(t, probs, freq, 0.015)
	_, again := draw(blocks.SamplerConfig{Temperature: 1, Seed: 7})
	require.Equal(t, seq, again)
	_, other := draw(blocks.SamplerConfig{Temperature: 1, Seed: 8})
	require.NotEqual(t, seq, other)

	// Top-k 2 renormalizes over {0.5, 0.3}.
	freq, _ = draw(blocks.SamplerConfig{Temperature: 1, TopK: 2, Seed: 1})
	require.InDeltaSlice(t, []float64{0.625, 0.375, 0, 0}, freq, 0.015)
	// Top-p 0.7: the smallest set with mass > 0.7 is {0.5, 0.3}.
	freq, _ = draw(blocks.SamplerConfig{Temperature: 1, TopP: 0.7, Seed: 1})
	require.InDeltaSlice(t, []float64{0.625, 0.375, 0, 0}, freq, 0.015)
	// A low temperature sharpens towards the argmax: p_i^(1/T) renormalized.
	freq, _ = draw(blocks.SamplerConfig{Temperature: 0.5, Seed: 1})
	sq := []float64{0.25, 0.09, 0.0225, 0.0025}
	var z float64
	for _, v := range sq {
		z += v
	}
	for i := range sq {
		sq[i] /= z
	}
	require.InDeltaSlice(t, sq, freq, 0.015)
}

// countingForwarder records the nTokens of each Forward call.
type countingForwarder struct {
	blocks.Session
	calls []int
}

func (f *countingForwarder) Forward(ctx context.Context, pos int, hidden []float32, n int) ([]float32, error) {
	f.calls = append(f.calls, n)
	return f.Session.Forward(ctx, pos, hidden, n)
}

// scriptedHead is a real head whose logits are replaced by one-hot logits
// of a scripted token sequence, to drive Generate's stopping rules.
type scriptedHead struct {
	blocks.Head
	script []int
}

func (h *scriptedHead) Logits(hidden []float32) ([]float32, error) {
	if _, err := h.Head.Logits(hidden); err != nil {
		return nil, err
	}
	l := make([]float32, h.Info().Vocab)
	l[h.script[0]] = 1
	h.script = h.script[1:]
	return l, nil
}

// TestGenerate checks Generate's run.c semantics: the prompt is prefilled
// in one call, then one call per generated token; emit sees each token with
// its predecessor; max tokens, BOS, EOS, an emit error and a cancelled
// context each stop it.
func TestGenerate(t *testing.T) {
	l := tinyModel(t)
	prompt := []int{1, 300, 301, 302}
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{})
	require.NoError(t, err)
	run := func(script []int, maxTokens int, emit func(prev, next int) error) ([]int, []int, error) {
		s, err := l.engine.NewSession(l.engine.Span(), 16)
		require.NoError(t, err)
		defer s.Close()
		fw := &countingForwarder{Session: s}
		ids, err := blocks.Generate(context.Background(), &scriptedHead{Head: l.head, script: script}, fw, prompt, maxTokens, sampler, emit)
		return ids, fw.calls, err
	}
	tests := []struct {
		name      string
		script    []int
		maxTokens int
		wantIDs   []int
		wantCalls []int
	}{
		{"max tokens", []int{10, 11, 12, 13, 14, 15}, 4, []int{10, 11, 12, 13}, []int{4, 1, 1, 1}},
		{"BOS stops", []int{10, 11, 1, 13}, 9, []int{10, 11}, []int{4, 1, 1}},
		{"EOS stops", []int{10, 2, 12}, 9, []int{10}, []int{4, 1}},
		{"zero tokens", []int{10}, 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pairs [][2]int
			ids, calls, err := run(tt.script, tt.maxTokens, func(prev, next int) error {
				pairs = append(pairs, [2]int{prev, next})
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, tt.wantIDs, ids)
			require.Equal(t, tt.wantCalls, calls)
			prev := prompt[len(prompt)-1]
			require.Len(t, pairs, len(ids))
			for i, p := range pairs {
				require.Equal(t, [2]int{prev, ids[i]}, p)
				prev = ids[i]
			}
		})
	}

	stop := errors.New("stop")
	ids, _, err := run([]int{10, 11}, 5, func(int, int) error { return stop })
	require.ErrorIs(t, err, stop)
	require.Empty(t, ids)

	s, err := l.engine.NewSession(l.engine.Span(), 16)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = blocks.Generate(ctx, l.head, s, prompt, 5, sampler, func(int, int) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
	_, err = blocks.Generate(context.Background(), l.head, s, nil, 5, sampler, nil)
	require.ErrorIs(t, err, blocks.ErrArgument)
}
