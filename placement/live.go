package placement

import (
	"errors"

	"github.com/swarmllm/swarm/swarm"
)

// Live is the placement a live swarm reaches without replanning: servers
// join one at a time in in.Order (nil: index order) and each takes the span
// Incremental gives it next to the servers that joined before (what
// `swarm serve --blocks auto` does); a server that cannot hold one block
// plus R attention caches hosts nothing. Like CGBP it returns the plan with
// an *InfeasibleError when a block stays uncovered; other errors wrap
// ErrBadInput.
func Live(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	order := in.Order
	if order == nil {
		order = make([]int, len(in.Servers))
		for j := range order {
			order[j] = j
		}
	}
	spans := make([]swarm.Span, len(in.Servers))
	blocks := make([]int, len(in.Servers))
	var joined []int
	for _, j := range order {
		s, err := Incremental(in, spans, j)
		if errors.Is(err, ErrInfeasible) {
			continue
		}
		if err != nil {
			return Plan{}, err
		}
		spans[j], blocks[j] = s, s.Len()
		joined = append(joined, j)
	}
	p := newPlan(in, "cgbp-live", blocks)
	p.Spans, p.Order = spans, joined
	return p, coverage(in, p, blocks)
}

// LiveReplan is Live followed by one Replan (all servers alive, options
// opt): the placement a live swarm reaches once replanning has run. It
// returns the final plan (Final spans; Live's when the migration is not
// applied) and the replanning. Errors as Live and Replan.
func LiveReplan(in Input, opt ReplanOptions) (Plan, Replanning, error) {
	live, err := Live(in)
	if err != nil && !errors.Is(err, ErrInfeasible) {
		return Plan{}, Replanning{}, err
	}
	r, err := Replan(in, live.Spans, nil, opt)
	if err != nil {
		return Plan{}, Replanning{}, err
	}
	spans := live.Spans
	if r.Apply {
		spans = r.Final
	}
	blocks := make([]int, len(spans))
	for j, s := range spans {
		blocks[j] = s.Len()
	}
	p := newPlan(in, "cgbp-replan", blocks)
	p.Spans, p.Order = spans, amortizedOrder(p.Amortized, blocks)
	return p, r, coverage(in, p, blocks)
}

// liveReplan is LiveReplan with MinGain = DefaultMinGain, as a Func.
func liveReplan(in Input) (Plan, error) {
	p, _, err := LiveReplan(in, ReplanOptions{MinGain: DefaultMinGain})
	return p, err
}
