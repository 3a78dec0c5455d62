package blocks

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSamplerOpenAIPenalties holds adjust to OpenAI's definition
// (https://platform.openai.com/docs/advanced-usage, "Frequency and presence
// penalties"): mu[j] - c[j]*alpha_frequency - 1[c[j] > 0]*alpha_presence,
// then logit_bias added; c[j] counts the sampler's own draws. Expected
// values are worked out by hand (all exact in float32).
func TestSamplerOpenAIPenalties(t *testing.T) {
	logits := []float32{1, 2, 0.5, -1}
	tests := []struct {
		name  string
		cfg   SamplerConfig
		drawn map[int]int
		want  []float32
	}{
		{"off", SamplerConfig{}, map[int]int{1: 3, 2: 1}, []float32{1, 2, 0.5, -1}},
		// token 1: 2 - 0.5; token 2: 0.5 - 0.5; the count does not matter.
		{"presence", SamplerConfig{PresencePenalty: 0.5}, map[int]int{1: 3, 2: 1}, []float32{1, 1.5, 0, -1}},
		// token 1: 2 - 3*0.25 = 1.25; token 2: 0.5 - 0.25 = 0.25.
		{"frequency", SamplerConfig{FrequencyPenalty: 0.25}, map[int]int{1: 3, 2: 1}, []float32{1, 1.25, 0.25, -1}},
		// token 1: 2 - 0.75 - 0.5 = 0.75; token 2: 0.5 - 0.25 - 0.5 = -0.25.
		{"both", SamplerConfig{PresencePenalty: 0.5, FrequencyPenalty: 0.25}, map[int]int{1: 3, 2: 1}, []float32{1, 0.75, -0.25, -1}},
		// negative penalties encourage repetition: token 1: 2 + 2*1 + 1 = 5.
		{"negative", SamplerConfig{PresencePenalty: -1, FrequencyPenalty: -1}, map[int]int{1: 2}, []float32{1, 5, 0.5, -1}},
		// token 0: 1 - 0.5; token 3: -1 + 4; unbiased, undrawn tokens keep theirs.
		{"logit bias", SamplerConfig{LogitBias: map[int]float64{0: -0.5, 3: 4}}, nil, []float32{0.5, 2, 0.5, 3}},
		{"bias -100", SamplerConfig{LogitBias: map[int]float64{1: -100}}, nil, []float32{1, -98, 0.5, -1}},
		// penalties first, then the bias: token 1: 2 - 0.75 - 0.5 + 1 = 1.75.
		{"all", SamplerConfig{PresencePenalty: 0.5, FrequencyPenalty: 0.25, LogitBias: map[int]float64{1: 1, 3: 4}}, map[int]int{1: 3, 2: 1},
			[]float32{1, 1.75, -0.25, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSampler(tt.cfg)
			require.NoError(t, err)
			for id, c := range tt.drawn {
				s.drawn[id] = c
			}
			l := append([]float32(nil), logits...)
			require.NoError(t, s.adjust(l, []int{1, 1, 2, 0}), "the history (prompt included) is not what the OpenAI penalties count")
			require.Equal(t, tt.want, l)
		})
	}
}

// TestSamplerPenaltiesCountDraws: greedy decoding over the same logits
// [3, 2.5, 0] with frequency_penalty 1, worked by hand: 3 > 2.5 draws 0;
// then [2, 2.5, 0] draws 1; [2, 1.5, 0] draws 0; [1, 1.5, 0] draws 1;
// [1, 0.5, 0] draws 0.
func TestSamplerPenaltiesCountDraws(t *testing.T) {
	s, err := NewSampler(SamplerConfig{FrequencyPenalty: 1})
	require.NoError(t, err)
	var got []int
	for range 5 {
		next, err := s.Sample([]float32{3, 2.5, 0}, nil)
		require.NoError(t, err)
		got = append(got, next)
	}
	require.Equal(t, []int{0, 1, 0, 1, 0}, got)
}

func TestSamplerPenaltiesValidate(t *testing.T) {
	for _, c := range []SamplerConfig{
		{PresencePenalty: math.NaN()},
		{FrequencyPenalty: math.Inf(1)},
		{LogitBias: map[int]float64{-1: 1}},
		{LogitBias: map[int]float64{3: 100.5}},
		{LogitBias: map[int]float64{3: math.NaN()}},
	} {
		_, err := NewSampler(c)
		require.ErrorIs(t, err, ErrArgument, "%+v", c)
	}
	s, err := NewSampler(SamplerConfig{LogitBias: map[int]float64{3: 1}})
	require.NoError(t, err)
	_, err = s.Sample([]float32{1, 2, 3}, nil)
	require.ErrorIs(t, err, ErrArgument, "token 3 is outside a vocabulary of 3")
}

// evenOnly allows even token ids and records what it accepted.
type evenOnly struct{ accepted []int }

func (c *evenOnly) Allowed(id int) bool { return id%2 == 0 }
func (c *evenOnly) Accept(id int)       { c.accepted = append(c.accepted, id) }

// TestSamplerConstraint: disallowed tokens are never drawn, greedy or
// sampled, and each draw is accepted.
func TestSamplerConstraint(t *testing.T) {
	c := &evenOnly{}
	s, err := NewSampler(SamplerConfig{Constraint: c})
	require.NoError(t, err)
	next, err := s.Sample([]float32{0, 5, 1, 3}, nil)
	require.NoError(t, err)
	require.Equal(t, 2, next, "1 and 3 are masked; 1 > 0")
	s, err = NewSampler(SamplerConfig{Constraint: c, Temperature: 1, Seed: 1})
	require.NoError(t, err)
	for range 50 {
		next, err := s.Sample([]float32{0, 9, 0, 9}, nil)
		require.NoError(t, err)
		require.Zero(t, next%2)
	}
	require.Len(t, c.accepted, 51)
	none, err := NewSampler(SamplerConfig{Constraint: allowNone{}})
	require.NoError(t, err)
	_, err = none.Sample([]float32{1, 2}, nil)
	require.ErrorIs(t, err, ErrArgument)
}

type allowNone struct{}

func (allowNone) Allowed(int) bool { return false }
func (allowNone) Accept(int)       {}
