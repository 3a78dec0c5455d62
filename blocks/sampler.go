package blocks

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SamplerConfig chooses how the next token is drawn from the logits. The
// zero value is greedy decoding.
type SamplerConfig struct {
	// Temperature divides the logits before the softmax; 0 is greedy
	// (argmax, lowest id on ties, as llama2.c). Must be >= 0.
	Temperature float64
	// TopK keeps only the K most likely tokens; 0 keeps all.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability
	// sums past P (nucleus sampling, Holtzman et al. 2020, eq. 3; llama2.c's
	// sample_topp); 0 or 1 keeps all. Must be in [0, 1].
	TopP float64
	// RepetitionPenalty divides positive logits and multiplies negative
	// logits of tokens already in the history by this factor (Keskar et al.
	// 2019, CTRL, eq. in Sec. 4.1, as Hugging Face applies it); 0 or 1 is
	// off. Must be >= 0.
	RepetitionPenalty float64
	// PresencePenalty is subtracted once from the logit of every token the
	// sampler has drawn before (OpenAI's presence_penalty: mu[j] -=
	// alpha_presence * 1[c[j] > 0], c[j] counting this sampler's draws, not
	// the prompt); 0 is off. OpenAI's range is [-2, 2]; must be finite.
	PresencePenalty float64
	// FrequencyPenalty is subtracted from the logit of every token once per
	// time the sampler has drawn it (OpenAI's frequency_penalty: mu[j] -=
	// alpha_frequency * c[j]); 0 is off. OpenAI's range is [-2, 2]; must be
	// finite.
	FrequencyPenalty float64
	// LogitBias is added to the logits of the given token ids before
	// sampling (OpenAI's logit_bias; -100 bans a token, 100 all but forces
	// it); nil is off. Ids must be >= 0 (and < the vocabulary size, which
	// Sample checks) and biases in [-100, 100].
	LogitBias map[int]float64
	// Constraint, when set, masks the tokens that may not come next
	// (constrained decoding, e.g. output that must be JSON); nil allows
	// all. It is stateful: one per completion.
	Constraint Constraint
	// Seed seeds the PCG generator (math/rand/v2) of temperature sampling.
	Seed uint64
}

// Constraint restricts which tokens a Sampler may draw next. It is used by
// one goroutine at a time.
type Constraint interface {
	// Allowed reports whether token id may come next.
	Allowed(id int) bool
	// Accept advances the constraint past the drawn token id.
	Accept(id int)
}

// BudgetedConstraint is a Constraint that must reach an end within a number
// of tokens (e.g. a JSON document closed before max_tokens): the generator
// calls SetBudget with the most tokens it may still draw before the first
// Sample, and each Accept uses one.
type BudgetedConstraint interface {
	Constraint
	// SetBudget sets the tokens that may still be drawn (>= 0).
	SetBudget(tokens int)
	// Done reports that the text is complete: only the end of generation
	// may follow, so running out of budget here is a natural stop.
	Done() bool
}

// Validate returns an error wrapping ErrArgument naming the first setting out
// of range.
func (c SamplerConfig) Validate() error {
	switch {
	case c.Temperature < 0 || math.IsNaN(c.Temperature) || math.IsInf(c.Temperature, 0):
		return fmt.Errorf("%w: temperature %g, want >= 0 (0 = greedy)", ErrArgument, c.Temperature)
	case c.TopK < 0:
		return fmt.Errorf("%w: top-k %d, want >= 0 (0 = off)", ErrArgument, c.TopK)
	case !(c.TopP >= 0 && c.TopP <= 1):
		return fmt.Errorf("%w: top-p %g, want 0..1 (0 or 1 = off)", ErrArgument, c.TopP)
	case !(c.RepetitionPenalty >= 0) || math.IsInf(c.RepetitionPenalty, 0):
		return fmt.Errorf("%w: repetition penalty %g, want >= 0 (1 = off)", ErrArgument, c.RepetitionPenalty)
	case math.IsNaN(c.PresencePenalty) || math.IsInf(c.PresencePenalty, 0):
		return fmt.Errorf("%w: presence penalty %g, want a finite number (0 = off)", ErrArgument, c.PresencePenalty)
	case math.IsNaN(c.FrequencyPenalty) || math.IsInf(c.FrequencyPenalty, 0):
		return fmt.Errorf("%w: frequency penalty %g, want a finite number (0 = off)", ErrArgument, c.FrequencyPenalty)
	}
	for id, b := range c.LogitBias {
		if id < 0 || !(b >= -100 && b <= 100) {
			return fmt.Errorf("%w: logit bias %g for token %d, want a token id >= 0 and a bias in [-100, 100]", ErrArgument, b, id)
		}
	}
	return nil
}

// Sampler draws tokens from logits. It is used by one goroutine at a time.
type Sampler struct {
	cfg SamplerConfig
	rng *rand.Rand
	// drawn counts the tokens Sample has returned, for the presence and
	// frequency penalties.
	drawn map[int]int
}

// NewSampler validates cfg and returns a sampler seeded with cfg.Seed.
func NewSampler(cfg SamplerConfig) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), drawn: map[int]int{}}, nil
}

// Sample returns the next token id given logits [Vocab] and the ids seen so
// far (prompt and generated; used only by the repetition penalty), and
// counts it as drawn (for the presence and frequency penalties: one
// Sampler per completion); with a Constraint, only allowed tokens are
// drawn, and the drawn one is accepted. logits is not modified. It returns an error
// wrapping ErrArgument for empty or NaN logits, or a logit bias outside
// the vocabulary.
func (s *Sampler) Sample(logits []float32, history []int) (int, error) {
	if len(logits) == 0 {
		return 0, fmt.Errorf("%w: no logits to sample from", ErrArgument)
	}
	l := slices.Clone(logits)
	for i, v := range l {
		if v != v {
			return 0, fmt.Errorf("%w: logit %d is NaN", ErrArgument, i)
		}
	}
	if err := s.adjust(l, history); err != nil {
		return 0, err
	}
	if c := s.cfg.Constraint; c != nil {
		allowed := false
		for i := range l {
			if !c.Allowed(i) {
				l[i] = float32(math.Inf(-1))
			} else {
				allowed = true
			}
		}
		if !allowed {
			return 0, fmt.Errorf("%w: the constraint allows no token", ErrArgument)
		}
	}
	next := s.draw(l)
	s.drawn[next]++
	if c := s.cfg.Constraint; c != nil {
		c.Accept(next)
	}
	return next, nil
}

// adjust applies the repetition penalty, the presence and frequency
// penalties and the logit bias to the logits l, in that order.
func (s *Sampler) adjust(l []float32, history []int) error {
	n := len(l)
	for id := range s.cfg.LogitBias {
		if id >= n {
			return fmt.Errorf("%w: logit bias for token %d, outside the vocabulary of %d", ErrArgument, id, n)
		}
	}
	if r := float32(s.cfg.RepetitionPenalty); r != 0 && r != 1 {
		seen := make(map[int]bool, len(history))
		for _, t := range history {
			if t < 0 || t >= n || seen[t] {
				continue
			}
			seen[t] = true
			if l[t] > 0 {
				l[t] /= r
			} else {
				l[t] *= r
			}
		}
	}
	if s.cfg.PresencePenalty != 0 || s.cfg.FrequencyPenalty != 0 {
		for id, c := range s.drawn {
			if id >= 0 && id < n {
				l[id] -= float32(s.cfg.PresencePenalty + s.cfg.FrequencyPenalty*float64(c))
			}
		}
	}
	for id, b := range s.cfg.LogitBias {
		l[id] += float32(b)
	}
	return nil
}

// draw picks a token from adjusted logits l (modified): greedy at
// temperature 0, else top-k, softmax and top-p.
func (s *Sampler) draw(l []float32) int {
	n := len(l)
	if s.cfg.Temperature == 0 {
		return argmax(l)
	}
	for i := range l {
		l[i] /= float32(s.cfg.Temperature)
	}
	if k := s.cfg.TopK; k > 0 && k < n {
		keepTopK(l, k)
	}
	softmax(l)
	coin := s.rng.Float32()
	if p := s.cfg.TopP; p > 0 && p < 1 {
		return sampleTopP(l, float32(p), coin)
	}
	return sampleMult(l, coin)
}

// argmax returns the index of the largest value, the lowest index on ties.
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// keepTopK sets every logit below the k-th largest to -Inf (ties at the
// k-th value are kept).
func keepTopK(l []float32, k int) {
	sorted := slices.Clone(l)
	slices.SortFunc(sorted, func(a, b float32) int { return cmp.Compare(b, a) })
	th := sorted[k-1]
	for i, v := range l {
		if v < th {
			l[i] = float32(math.Inf(-1))
		}
	}
}

// sampleMult samples an index from probabilities p with coin in [0, 1)
// (llama2.c sample_mult).
func sampleMult(p []float32, coin float32) int {
	var cdf float32
	for i, v := range p {
		cdf += v
		if coin < cdf {
			return i
		}
	}
	return len(p) - 1 // rounding errors
}

// sampleTopP samples from the smallest set of most likely indices whose
// probabilities sum past topP (llama2.c sample_topp, including its cutoff
// that skips tokens which can never be part of the set).
func sampleTopP(p []float32, topP, coin float32) int {
	n := len(p)
	cutoff := (1 - topP) / float32(max(n-1, 1))
	type pi struct {
		p float32
		i int
	}
	cand := make([]pi, 0, n)
	for i, v := range p {
		if v >= cutoff {
			cand = append(cand, pi{v, i})
		}
	}
	if len(cand) == 0 {
		return argmax(p)
	}
	slices.SortStableFunc(cand, func(a, b pi) int { return cmp.Compare(b.p, a.p) })
	var cum float32
	last := len(cand) - 1
	for i, c := range cand {
		cum += c.p
		if cum > topP {
			last = i
			break
		}
	}
	r := coin * cum
	var cdf float32
	for _, c := range cand[:last+1] {
		cdf += c.p
		if r < cdf {
			return c.i
		}
	}
	return cand[last].i
}
