package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/swarmllm/swarm/placement"
)

// Result is what one algorithm achieved in one run, or (from Summarize)
// the mean over runs. Times are seconds.
type Result struct {
	// Algorithm is the algorithm's name.
	Algorithm string `json:"algorithm"`
	// PerToken is the average time per token over all tokens: the mean over
	// sessions of (completion - arrival) / l_max (paper 003 Table 4).
	PerToken float64 `json:"per_token"`
	// FirstToken is the mean time from arrival to the first token: waiting
	// plus prefill (Table C.7), plus the calibration's constants if any.
	FirstToken float64 `json:"first_token"`
	// RemainingToken is the mean time per token after the first (Table C.8).
	RemainingToken float64 `json:"remaining_token"`
	// Waiting is the mean time from arrival to start (cache admission).
	Waiting float64 `json:"waiting"`
	// Runtime is the wall time of the algorithm's placement and routing
	// calls in one run (Table 6); 0 when no clock was given.
	Runtime float64 `json:"runtime"`
	// MaxConcurrency is the largest number of sessions submitted but not
	// finished at once (paper 003 footnote 6).
	MaxConcurrency float64 `json:"max_concurrency"`
	// Retries is the mean number of rejected attempts per session
	// (AdmitRetry algorithms).
	Retries float64 `json:"retries"`
	// Hops is the mean number of servers per chain.
	Hops float64 `json:"hops"`
	// R is the design parameter R (target concurrent sessions) the
	// placement used; 0 for placements without one.
	R float64 `json:"r"`
	// Blocks is the mean number of blocks per server, by hardware kind.
	Blocks map[string]float64 `json:"blocks_per_server"`
	// UpperBound and LowerBound are the per-token bounds (17) and (B.8) of
	// the CG-BP placement (proposed only; 0 otherwise). They bound the decode
	// per-token time while at most R sessions run (Corollary 3.6).
	UpperBound float64 `json:"upper_bound,omitempty"`
	LowerBound float64 `json:"lower_bound,omitempty"`
	// SessionBound is the exact single-session lower bound
	// (placement.SessionBound, full RTT per hop) for the same R; proposed
	// only, like the bounds above.
	SessionBound float64 `json:"session_bound,omitempty"`
	// MovedBytes is the weight bytes the replanning of live-replan loads
	// (placement.Replanning.LoadBytes; 0 when not applied or for other
	// algorithms), and MoveSteps its number of migration steps.
	MovedBytes float64 `json:"moved_bytes,omitempty"`
	MoveSteps  float64 `json:"move_steps,omitempty"`
	// MoveTime is how long the replanning's weight loads take with
	// Fleet.MoveBandwidth (seconds, 0 without), and PerTokenBeforeMove and
	// PerTokenAfterMove the per-token means of the sessions arriving
	// before it ends (routed on the incremental placement) and after (on
	// the replanned one); 0 when no session arrived in that phase (and,
	// over runs, the mean of the runs that had such sessions).
	MoveTime           float64 `json:"move_time,omitempty"`
	PerTokenBeforeMove float64 `json:"per_token_before_move,omitempty"`
	PerTokenAfterMove  float64 `json:"per_token_after_move,omitempty"`
	// PerTokenCI, FirstTokenCI and RemainingTokenCI are the half-widths of
	// the 95% confidence intervals of PerToken, FirstToken and
	// RemainingToken over the runs averaged (Student t with Runs - 1
	// degrees of freedom, from Summarize); 0 for fewer than 2 runs.
	PerTokenCI       float64 `json:"per_token_ci95"`
	FirstTokenCI     float64 `json:"first_token_ci95"`
	RemainingTokenCI float64 `json:"remaining_token_ci95"`
	// Runs is the number of runs averaged (1 for a single run, 0 when the
	// algorithm failed in every run).
	Runs int `json:"runs"`
	// Errors lists why runs failed (e.g. an infeasible placement).
	Errors []string `json:"errors,omitempty"`
}

// Arrivals draws n arrival times (seconds, ascending) of a Poisson process
// of the given rate starting at 0.
func Arrivals(rng *rand.Rand, rate float64, n int) []float64 {
	out := make([]float64, n)
	t := 0.0
	for i := range out {
		t += rng.ExpFloat64() / rate
		out[i] = t
	}
	return out
}

// Run simulates each algorithm once on fleet f under workload w. rng draws,
// in this order, the arrival times (shared by all algorithms) and the
// PETALS join order (a random permutation, shared by petals and
// opt-number). clock, when non-nil, measures the wall time of the placement
// and routing calls (Result.Runtime); the simulation never depends on it.
//
// It returns an error wrapping ErrBadConfig for a bad fleet or workload; an
// algorithm that fails (infeasible placement, no route) gets a Result with
// Runs = 0 and the reason in Errors, and the others still run.
func Run(f *Fleet, w Workload, algs []Algorithm, rng *rand.Rand, clock func() time.Time) ([]Result, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	arrivals := Arrivals(rng, w.Rate, w.Requests)
	order := rng.Perm(len(f.Servers))

	var r int
	var rErr error
	for _, a := range algs {
		if a.usesR() {
			r, rErr = ChooseR(f, w)
			break
		}
	}
	out := make([]Result, 0, len(algs))
	for _, a := range algs {
		res := Result{Algorithm: a.Name}
		sessions := 1
		if a.usesR() {
			if rErr != nil {
				res.Errors = []string{rErr.Error()}
				out = append(out, res)
				continue
			}
			sessions, res.R = r, float64(r)
			if a.Name == "refined-fp" {
				fp, err := FixedPointR(f, w, a.Placement)
				if err != nil {
					res.Errors = []string{err.Error()}
					out = append(out, res)
					continue
				}
				sessions, res.R = fp, float64(fp)
			}
		}
		if err := runOne(f, w, a, placementOrder(a, order), sessions, arrivals, clock, &res); err != nil {
			res.Errors = []string{err.Error()}
			res.Runs = 0
		}
		out = append(out, res)
	}
	return out, nil
}

// placementOrder is the server join order the placement sees: the random
// arrival order for the PETALS placements (opt-order reorders it itself)
// and the live ones (incremental CG-BP at join).
func placementOrder(a Algorithm, order []int) []int {
	switch a.Placement {
	case "petals", "opt-number", "opt-order", "cgbp-live", "cgbp-replan":
		return order
	}
	return nil
}

func runOne(f *Fleet, w Workload, a Algorithm, order []int, r int, arrivals []float64, clock func() time.Time, res *Result) error {
	in := f.placementInput(w, r, order, &a)
	var t0 time.Time
	if clock != nil {
		t0 = clock()
	}
	plan, moves, err := a.place(in)
	var placeTime time.Duration
	if clock != nil {
		placeTime = clock().Sub(t0)
	}
	if err != nil {
		return fmt.Errorf("%s placement: %w", a.Placement, err)
	}
	if a.Placement == "cgbp" {
		if ub, err := placement.UpperBound(in); err == nil {
			res.UpperBound = ub
		}
		if lb, err := placement.LowerBound(in); err == nil {
			res.LowerBound = lb
		}
		if sb, err := placement.SessionBound(in); err == nil {
			res.SessionBound = sb
		}
	}
	if moves != nil && moves.Apply {
		res.MovedBytes, res.MoveSteps = float64(moves.LoadBytes), float64(len(moves.Steps))
	}
	first, moveTime := plan, 0.0
	if moves != nil && moves.Apply && f.MoveBandwidth > 0 {
		// The live swarm serves on the incremental placement while the
		// replanning loads its weights.
		if first, err = placement.Live(in); err != nil {
			return fmt.Errorf("%s placement: %w", a.Placement, err)
		}
		for _, st := range moves.Steps {
			slowest := int64(0)
			for _, m := range st.Moves {
				slowest = max(slowest, m.LoadBytes)
			}
			moveTime += float64(slowest) / f.MoveBandwidth
		}
	}
	e, err := newEngine(f, w, a, first, clock)
	if err != nil {
		return err
	}
	if moveTime > 0 {
		e.next, e.switchAt = &plan, moveTime
	}
	if err := e.run(arrivals); err != nil {
		return err
	}
	e.summarize(res)
	if moveTime > 0 {
		res.MoveTime = moveTime
		res.PerTokenBeforeMove, res.PerTokenAfterMove = e.perTokenSplit(moveTime)
	}
	res.Runtime = (placeTime + e.routeTime).Seconds()
	res.Blocks = blocksByKind(f, plan)
	res.Runs = 1
	return nil
}

// summarize fills the per-session means of one run.
func (e *engine) summarize(res *Result) {
	n := float64(len(e.sessions))
	l := float64(e.work.OutputTokens)
	for _, s := range e.sessions {
		wait := s.start - s.arrival
		res.PerToken += (s.end - s.arrival) / l / n
		res.FirstToken += (wait + s.setup + s.prefill) / n
		res.Waiting += wait / n
		res.Retries += float64(s.retries) / n
		res.Hops += float64(len(s.chain)) / n
		if e.work.OutputTokens > 1 {
			d := s.decode
			if e.shared() { // the tokens after the first, as they ran
				d = (s.end - (s.start + s.setup + s.prefill)) / (l - 1)
			}
			res.RemainingToken += d / n
		}
	}
	res.MaxConcurrency = float64(e.maxConc)
}

// perTokenSplit returns the per-token means of the sessions arriving
// before t and at or after t (0 for an empty group).
func (e *engine) perTokenSplit(t float64) (before, after float64) {
	var nb, na float64
	l := float64(e.work.OutputTokens)
	for _, s := range e.sessions {
		v := (s.end - s.arrival) / l
		if s.arrival < t {
			before += v
			nb++
		} else {
			after += v
			na++
		}
	}
	if nb > 0 {
		before /= nb
	}
	if na > 0 {
		after /= na
	}
	return before, after
}

// blocksByKind returns the mean blocks per server for each hardware kind.
func blocksByKind(f *Fleet, plan placement.Plan) map[string]float64 {
	sum := map[string]float64{}
	cnt := map[string]float64{}
	for j, s := range f.Servers {
		sum[s.Hardware.Kind] += float64(plan.Spans[j].Len())
		cnt[s.Hardware.Kind]++
	}
	for k := range sum {
		sum[k] /= cnt[k]
	}
	return sum
}

// SessionTime returns the time one session takes on an idle fleet under
// the CG-BP placement for R = 1 and WS-RR routing (eq. 1, no waiting): the
// "time for a single request" the paper's R rule starts from, in seconds.
// It includes the fleet's Calibration.InitialDelay, as the authors'
// time_per_request does (BPRR_heuristic_general_extended.m adds
// initial_delay), but no allocation delay.
func SessionTime(f *Fleet, w Workload) (float64, error) {
	return sessionTimeAt(f, w, "cgbp", 1)
}

// FixedPointR returns placement.FixedPointR for the fleet: R chosen as
// ChooseR does, from the idle-fleet session time (as SessionTime) of the
// placement called name made for the R of the previous step, until R is
// stable.
func FixedPointR(f *Fleet, w Workload, name string) (int, error) {
	r, _, err := placement.FixedPointR(f.placementInput(w, 1, nil, nil), w.Rate, func(r int) (float64, error) {
		return sessionTimeAt(f, w, name, r)
	})
	if err != nil {
		return 0, fmt.Errorf("sim: fixed-point R: %w", err)
	}
	return r, nil
}

// sessionTimeAt is SessionTime with the placement called name made for R
// = r.
func sessionTimeAt(f *Fleet, w Workload, name string, r int) (float64, error) {
	in := f.placementInput(w, r, nil, nil)
	place, err := placement.Lookup(name)
	if err != nil {
		return 0, err
	}
	plan, err := place(in)
	if err != nil {
		return 0, fmt.Errorf("sim: session time: %s with R = %d: %w", name, r, err)
	}
	proposed, err := LookupAlgorithm("proposed")
	if err != nil {
		return 0, err
	}
	e, err := newEngine(f, w, proposed, plan, nil)
	if err != nil {
		return 0, err
	}
	c, err := e.routeNow()
	if err != nil {
		return 0, fmt.Errorf("sim: session time: %w", err)
	}
	prefill, decode := e.times(c)
	return f.Calibration.InitialDelay + prefill + float64(w.OutputTokens-1)*decode, nil
}

// ChooseR returns the design parameter R of paper 003 (after Corollary
// 3.6, and Sec. 4.1 "Benchmark"): the mean plus one standard deviation of
// the number of Poisson arrivals during one session (SessionTime), capped
// by (19) (placement.ChooseR).
func ChooseR(f *Fleet, w Workload) (int, error) {
	t, err := SessionTime(f, w)
	if err != nil {
		return 0, err
	}
	mean, std := placement.PoissonLoad(w.Rate, t)
	r, err := placement.ChooseR(f.placementInput(w, 1, nil, nil), mean, std)
	if err != nil {
		return 0, fmt.Errorf("sim: choose R: %w", err)
	}
	return r, nil
}

// Summarize averages results over runs, per algorithm, in the order of the
// first run. Failed runs are skipped; their errors are kept.
func Summarize(runs [][]Result) []Result {
	if len(runs) == 0 {
		return nil
	}
	out := make([]Result, len(runs[0]))
	nBefore := make([]float64, len(out)) // runs with sessions before / after a move
	nAfter := make([]float64, len(out))
	for i := range out {
		out[i].Algorithm = runs[0][i].Algorithm
		out[i].Blocks = map[string]float64{}
	}
	for _, run := range runs {
		for i, r := range run {
			if i >= len(out) {
				break
			}
			m := &out[i]
			m.Errors = append(m.Errors, r.Errors...)
			if r.Runs == 0 {
				continue
			}
			m.Runs++
			m.PerToken += r.PerToken
			m.FirstToken += r.FirstToken
			m.RemainingToken += r.RemainingToken
			m.Waiting += r.Waiting
			m.Runtime += r.Runtime
			m.MaxConcurrency += r.MaxConcurrency
			m.Retries += r.Retries
			m.Hops += r.Hops
			m.R += r.R
			m.UpperBound += r.UpperBound
			m.LowerBound += r.LowerBound
			m.SessionBound += r.SessionBound
			m.MovedBytes += r.MovedBytes
			m.MoveSteps += r.MoveSteps
			m.MoveTime += r.MoveTime
			if r.PerTokenBeforeMove > 0 {
				m.PerTokenBeforeMove += r.PerTokenBeforeMove
				nBefore[i]++
			}
			if r.PerTokenAfterMove > 0 {
				m.PerTokenAfterMove += r.PerTokenAfterMove
				nAfter[i]++
			}
			for k, v := range r.Blocks {
				m.Blocks[k] += v
			}
		}
	}
	for i := range out {
		m := &out[i]
		if m.Runs == 0 {
			continue
		}
		m.PerTokenCI = ci95(runs, i, func(r Result) float64 { return r.PerToken })
		m.FirstTokenCI = ci95(runs, i, func(r Result) float64 { return r.FirstToken })
		m.RemainingTokenCI = ci95(runs, i, func(r Result) float64 { return r.RemainingToken })
		n := float64(m.Runs)
		m.PerToken /= n
		m.FirstToken /= n
		m.RemainingToken /= n
		m.Waiting /= n
		m.Runtime /= n
		m.MaxConcurrency /= n
		m.Retries /= n
		m.Hops /= n
		m.R /= n
		m.UpperBound /= n
		m.LowerBound /= n
		m.SessionBound /= n
		m.MovedBytes /= n
		m.MoveSteps /= n
		m.MoveTime /= n
		if nBefore[i] > 0 {
			m.PerTokenBeforeMove /= nBefore[i]
		}
		if nAfter[i] > 0 {
			m.PerTokenAfterMove /= nAfter[i]
		}
		for k := range m.Blocks {
			m.Blocks[k] /= n
		}
	}
	return out
}

// ci95 returns the half-width of the 95% confidence interval of the mean
// of v over the successful runs of algorithm i: t_{0.975, n-1} s / sqrt(n)
// with s the sample standard deviation; 0 for fewer than 2 runs.
func ci95(runs [][]Result, i int, v func(Result) float64) float64 {
	var xs []float64
	for _, run := range runs {
		if i < len(run) && run[i].Runs > 0 {
			xs = append(xs, v(run[i]))
		}
	}
	n := len(xs)
	if n < 2 {
		return 0
	}
	mean := 0.0
	for _, x := range xs {
		mean += x / float64(n)
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return studentT975(n-1) * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
}

// studentT975 is the 0.975 quantile of Student's t with df degrees of
// freedom (df >= 1): tabulated to 30, then the normal 1.96 with the
// first-order correction 1.96 + 2.4/df (within 0.2% of the table).
func studentT975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df <= len(table) {
		return table[df-1]
	}
	return 1.96 + 2.4/float64(df)
}
