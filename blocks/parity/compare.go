package parity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// ErrOptions marks a comparison asked for with options out of range.
var ErrOptions = errors.New("parity: bad options")

// Options choose the inputs and the pass bound of Compare. Start from
// DefaultOptions.
type Options struct {
	// Seed selects the pseudo-random hidden states (PCG streams of
	// math/rand/v2); the same seed gives the same inputs.
	Seed uint64
	// Prefill is the tokens of the first step, one Forward at position 0;
	// at least 1.
	Prefill int
	// Decode is the single-token steps after the prefill; at least 0.
	Decode int
	// Replay is how many of the last positions the replay check truncates
	// and runs again on the candidate; 0 skips the check, at most
	// Prefill+Decode.
	Replay int
	// Bound, when > 0, replaces DefaultBound as the largest MaxRelErr
	// that passes.
	Bound float64
}

// DefaultOptions are a 7-token prefill, 5 decode steps, a replay of the
// last 3 positions, seed 1 and the default bound.
func DefaultOptions() Options {
	return Options{Seed: 1, Prefill: 7, Decode: 5, Replay: 3}
}

// Validate returns an error wrapping ErrOptions naming the first field out
// of range.
func (o Options) Validate() error {
	switch {
	case o.Prefill < 1:
		return fmt.Errorf("%w: prefill %d tokens, want >= 1", ErrOptions, o.Prefill)
	case o.Decode < 0:
		return fmt.Errorf("%w: decode %d steps, want >= 0", ErrOptions, o.Decode)
	case o.Replay < 0 || o.Replay > o.Prefill+o.Decode:
		return fmt.Errorf("%w: replay %d positions, want 0 .. prefill+decode = %d", ErrOptions, o.Replay, o.Prefill+o.Decode)
	case o.Bound < 0 || math.IsNaN(o.Bound) || math.IsInf(o.Bound, 0):
		return fmt.Errorf("%w: bound %g, want >= 0 (0: the default)", ErrOptions, o.Bound)
	}
	return nil
}

// StepError is the difference of one step's outputs.
type StepError struct {
	// Pos and Tokens are the step's first position and its token count.
	Pos    int `json:"pos"`
	Tokens int `json:"tokens"`
	// MaxAbsErr is max |cand - ref| over the step's outputs [Tokens,
	// DModel]; MaxRelErr divides it by RefMaxAbs, max |ref|.
	MaxAbsErr float64 `json:"max_abs_err"`
	MaxRelErr float64 `json:"max_rel_err"`
	RefMaxAbs float64 `json:"ref_max_abs"`
}

// Report is the outcome of Compare. Errors that are not finite (a NaN or
// infinite output) are reported as math.MaxFloat64, so the report always
// encodes as JSON.
type Report struct {
	// Model is the model's name (ModelInfo.Name; callers that opened a
	// file may put its path here), Arch its architecture and DType its
	// weight dtype (ModelInfo.DType).
	Model string `json:"model"`
	Arch  string `json:"arch"`
	DType string `json:"dtype"`
	// Reference and Candidate are the backends' names.
	Reference string `json:"reference"`
	Candidate string `json:"candidate"`
	// RefCacheDType and CandCacheDType are the backends' attention-cache
	// dtypes; RefComputeDType and CandComputeDType what they compute in
	// (ComputeDType).
	RefCacheDType    swarm.DType `json:"ref_cache_dtype"`
	CandCacheDType   swarm.DType `json:"cand_cache_dtype"`
	RefComputeDType  swarm.DType `json:"ref_compute_dtype"`
	CandComputeDType swarm.DType `json:"cand_compute_dtype"`
	// Steps are the prefill and then each decode step, in order.
	Steps []StepError `json:"steps"`
	// MaxAbsErr and MaxRelErr are the worst of Steps.
	MaxAbsErr float64 `json:"max_abs_err"`
	MaxRelErr float64 `json:"max_rel_err"`
	// Bound is the largest MaxRelErr that passes: Options.Bound or
	// DefaultBound.
	Bound float64 `json:"bound"`
	// ReplayExact reports that truncating the candidate's session to the
	// last Options.Replay positions and running them again gave outputs
	// bit for bit the first run's (true when Replay is 0).
	ReplayExact bool `json:"replay_exact"`
	// BatchExact reports that the candidate's ForwardBatch gave two
	// sessions bit for bit what each computes alone; nil (JSON null) when
	// its engine is not a blocks.BatchEngine.
	BatchExact *bool `json:"batch_exact"`
	// Pass is MaxRelErr <= Bound, ReplayExact, and BatchExact unless nil.
	Pass bool `json:"pass"`
	// Failures says why Pass is false, one line per reason.
	Failures []string `json:"failures,omitempty"`
}

// BatchText is "exact", "differs" or "not a batch engine".
func (r Report) BatchText() string {
	switch {
	case r.BatchExact == nil:
		return "not a batch engine"
	case *r.BatchExact:
		return "exact"
	}
	return "differs"
}

// call is one Forward of a run: count tokens at pos.
type call struct{ pos, count int }

// plan is the calls of one session: a prefill of prefill tokens, then
// decode single-token steps.
func plan(prefill, decode int) []call {
	calls := []call{{0, prefill}}
	for i := range decode {
		calls = append(calls, call{prefill + i, 1})
	}
	return calls
}

// inputs draws each call's hidden states [count, d], standard normal, from
// the PCG stream (seed, stream).
func inputs(calls []call, d int, seed, stream uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, stream))
	out := make([][]float32, len(calls))
	for i, c := range calls {
		x := make([]float32, c.count*d)
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		out[i] = x
	}
	return out
}

// run opens a session of e for the calls and returns each call's outputs,
// leaving the session open for the replay check.
func run(ctx context.Context, e blocks.Engine, calls []call, in [][]float32) (blocks.Session, [][]float32, error) {
	last := calls[len(calls)-1]
	s, err := e.NewSession(e.Span(), last.pos+last.count)
	if err != nil {
		return nil, nil, err
	}
	out := make([][]float32, len(calls))
	for i, c := range calls {
		if out[i], err = s.Forward(ctx, c.pos, in[i], c.count); err != nil {
			s.Close()
			return nil, nil, fmt.Errorf("forward of %d tokens at position %d: %w", c.count, c.pos, err)
		}
	}
	return s, out, nil
}

// Compare runs the same hidden states through engines of ref and cand over
// the whole span of m and reports how far cand's outputs are from ref's,
// and whether cand replays and batches bit for bit (Report). A mismatch is
// a Report with Pass false, not an error; errors are the options'
// (ErrOptions), the engines' loading and Forward errors, and ctx's.
func Compare(ctx context.Context, ref, cand blocks.Backend, m *blocks.Model, opts Options) (Report, error) {
	if err := opts.Validate(); err != nil {
		return Report{}, err
	}
	info := m.Info()
	rep := Report{
		Model: info.Name, Arch: info.Arch, DType: info.DType.String(),
		Reference: ref.Name(), Candidate: cand.Name(),
		RefCacheDType: ref.CacheDType(), CandCacheDType: cand.CacheDType(),
		RefComputeDType: ComputeDType(ref), CandComputeDType: ComputeDType(cand),
		Bound: opts.Bound,
	}
	if rep.Bound == 0 {
		rep.Bound = DefaultBound(info.DType, ref, cand)
	}
	span := info.Blocks()
	refEngine, err := m.LoadSpanWith(ref, span)
	if err != nil {
		return rep, fmt.Errorf("parity: reference backend %s: %w", ref.Name(), err)
	}
	defer refEngine.Close()
	candEngine, err := m.LoadSpanWith(cand, span)
	if err != nil {
		return rep, fmt.Errorf("parity: candidate backend %s: %w", cand.Name(), err)
	}
	defer candEngine.Close()

	d := info.DModel
	calls := plan(opts.Prefill, opts.Decode)
	in := inputs(calls, d, opts.Seed, 0)
	refSession, want, err := run(ctx, refEngine, calls, in)
	if err != nil {
		return rep, fmt.Errorf("parity: reference backend %s: %w", ref.Name(), err)
	}
	refSession.Close()
	candSession, got, err := run(ctx, candEngine, calls, in)
	if err != nil {
		return rep, fmt.Errorf("parity: candidate backend %s: %w", cand.Name(), err)
	}
	defer candSession.Close()
	for i, c := range calls {
		st := stepError(c, want[i], got[i])
		rep.Steps = append(rep.Steps, st)
		rep.MaxAbsErr = max(rep.MaxAbsErr, st.MaxAbsErr)
		rep.MaxRelErr = max(rep.MaxRelErr, st.MaxRelErr)
	}
	if rep.MaxRelErr > rep.Bound {
		rep.Failures = append(rep.Failures, fmt.Sprintf("max relative error %.3g exceeds the bound %.3g", rep.MaxRelErr, rep.Bound))
	}

	if rep.ReplayExact, err = replay(ctx, candSession, calls, in, got, opts.Replay, d); err != nil {
		return rep, fmt.Errorf("parity: candidate backend %s: replay: %w", cand.Name(), err)
	}
	if !rep.ReplayExact {
		rep.Failures = append(rep.Failures, fmt.Sprintf("replay of the last %d positions differs from the first run", opts.Replay))
	}
	if be, ok := candEngine.(blocks.BatchEngine); ok {
		exact, err := batch(ctx, be, calls, in, got, opts)
		if err != nil {
			return rep, fmt.Errorf("parity: candidate backend %s: batch: %w", cand.Name(), err)
		}
		rep.BatchExact = &exact
		if !exact {
			rep.Failures = append(rep.Failures, "ForwardBatch differs from the sessions run alone")
		}
	}
	rep.Pass = len(rep.Failures) == 0
	return rep, nil
}

// stepError measures one call's outputs. A NaN or infinity on either side
// counts as an error of math.MaxFloat64.
func stepError(c call, want, got []float32) StepError {
	st := StepError{Pos: c.pos, Tokens: c.count}
	if len(want) != len(got) {
		st.MaxAbsErr, st.MaxRelErr = math.MaxFloat64, math.MaxFloat64
		return st
	}
	for i, w := range want {
		e := math.Abs(float64(got[i]) - float64(w))
		if math.IsNaN(e) || math.IsInf(e, 0) {
			e = math.MaxFloat64
		}
		st.MaxAbsErr = max(st.MaxAbsErr, e)
		if a := math.Abs(float64(w)); !math.IsInf(a, 0) && !math.IsNaN(a) {
			st.RefMaxAbs = max(st.RefMaxAbs, a)
		}
	}
	switch {
	case st.MaxAbsErr == math.MaxFloat64:
		st.MaxRelErr = math.MaxFloat64
	case st.RefMaxAbs > 0:
		st.MaxRelErr = st.MaxAbsErr / st.RefMaxAbs
	case st.MaxAbsErr > 0:
		st.MaxRelErr = math.MaxFloat64
	}
	return st
}

// replay truncates s to its last n positions and runs them again with the
// same calls as the first run (the part of a call at or after the cut,
// then the later calls whole), reporting whether every output is bit for
// bit the first run's (first). n = 0 is trivially exact.
func replay(ctx context.Context, s blocks.Session, calls []call, in, first [][]float32, n, d int) (bool, error) {
	last := calls[len(calls)-1]
	from := last.pos + last.count - n
	exact := true
	for i, c := range calls {
		if n == 0 || c.pos+c.count <= from {
			continue
		}
		skip := max(from-c.pos, 0) // rows of this call before the cut
		count := c.count - skip
		out, err := s.Forward(ctx, c.pos+skip, in[i][skip*d:], count)
		if err != nil {
			return false, fmt.Errorf("forward of %d tokens at position %d: %w", count, c.pos+skip, err)
		}
		exact = exact && bitEqual(out, first[i][skip*d:])
	}
	return exact, nil
}

// batch runs two sessions of e through ForwardBatch and reports whether
// each got bit for bit what it computes alone. Session A takes calls with
// inputs in (alone: wantA, the candidate's first run); session B a prefill
// of another length with inputs of its own, one batch behind A, so the
// batches mix a prefill with a decode step.
func batch(ctx context.Context, e blocks.BatchEngine, calls []call, in, wantA [][]float32, opts Options) (bool, error) {
	d := e.Info().DModel
	callsB := plan(max(opts.Prefill/2, 1), opts.Decode)
	inB := inputs(callsB, d, opts.Seed, 1)
	sb, wantB, err := run(ctx, e, callsB, inB)
	if err != nil {
		return false, fmt.Errorf("session B alone: %w", err)
	}
	sb.Close()

	lastA, lastB := calls[len(calls)-1], callsB[len(callsB)-1]
	sa, err := e.NewSession(e.Span(), lastA.pos+lastA.count)
	if err != nil {
		return false, err
	}
	defer sa.Close()
	if sb, err = e.NewSession(e.Span(), lastB.pos+lastB.count); err != nil {
		return false, err
	}
	defer sb.Close()

	exact := true
	for i := range max(len(calls), len(callsB)+1) {
		var steps []blocks.Step
		var want [][]float32
		if i < len(calls) {
			c := calls[i]
			steps = append(steps, blocks.Step{Session: sa, Pos: c.pos, Hidden: in[i], NTokens: c.count})
			want = append(want, wantA[i])
		}
		if j := i - 1; j >= 0 && j < len(callsB) {
			c := callsB[j]
			steps = append(steps, blocks.Step{Session: sb, Pos: c.pos, Hidden: inB[j], NTokens: c.count})
			want = append(want, wantB[j])
		}
		for k, r := range e.ForwardBatch(ctx, steps) {
			if r.Err != nil {
				return false, fmt.Errorf("step of %d tokens at position %d: %w", steps[k].NTokens, steps[k].Pos, r.Err)
			}
			exact = exact && bitEqual(r.Hidden, want[k])
		}
	}
	return exact, nil
}

// bitEqual reports whether a and b hold the same float32 bit patterns.
func bitEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
