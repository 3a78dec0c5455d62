package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmllm/swarm/blocks"
)

// batchTokens is the token budget of one batch: the rows one pass over the
// span's weights computes. A prefill longer than that runs in chunks, so a
// long prompt never holds up the decode steps of other sessions for more
// than one batch.
const batchTokens = 64

// lingerFraction bounds how long the step loop waits for the sessions of
// the previous batch before it starts a smaller one: at most this fraction
// of the previous batch's compute time.
const lingerFraction = 8

// recentBatches is how many batches back a session counts as active: the
// loop waits (up to the linger) for the active sessions' next steps.
const recentBatches = 2

// stepper is the server's one step loop: it gathers the steps waiting from
// all sessions, runs them through the span in batches of up to batchTokens
// rows (one pass over the weights per batch, blocks.BatchEngine), and
// answers each. Every waiting session gets at least one row of every batch
// (while there are fewer sessions than rows), so a step waits for at most
// the batch running when it arrives; a slow client does not hold a batch,
// since only steps already waiting are taken.
type stepper struct {
	engine blocks.BatchEngine
	budget int
	log    *slog.Logger
	reqs   chan *stepReq
	done   chan struct{} // closed when the loop has ended
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// tokens counts the rows computed without error (TokensServed).
	tokens atomic.Int64
	// waiting is the number of steps in the loop's queue.
	waiting atomic.Int64
	// onBatch, if not nil, is told each batch's rows and compute time.
	onBatch func(rows int, d time.Duration)
}

// stepReq is one session's step waiting in the loop: hidden states
// [n, d] at positions pos.., of which the first taken rows are computed.
type stepReq struct {
	es     blocks.Session
	pos    int
	hidden []float32
	n      int
	taken  int       // rows computed so far
	out    []float32 // [n, d] once all rows are computed
	err    error
	answer chan struct{} // closed when out or err is set
}

// newStepper starts the step loop over e; Close stops it. onBatch, if not
// nil, is told each batch's rows and compute time, from the loop.
func newStepper(e blocks.BatchEngine, budget int, log *slog.Logger, onBatch func(rows int, d time.Duration)) *stepper {
	ctx, cancel := context.WithCancel(context.Background())
	p := &stepper{engine: e, budget: budget, log: log, reqs: make(chan *stepReq), done: make(chan struct{}), cancel: cancel, onBatch: onBatch}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.run(ctx)
	}()
	return p
}

// Close stops the loop: the steps waiting fail with blocks.ErrClosed; the
// running batch finishes first.
func (p *stepper) Close() {
	p.cancel()
	p.wg.Wait()
}

// forward runs one step of session es through the loop and returns its
// output hidden states [n, d] (see blocks.Session.Forward for the errors).
// ctx bounds the wait to hand the step to the loop; once handed over, the
// step is computed (a batch is short) and forward returns after the loop
// has answered, so es is never in use after forward returns.
func (p *stepper) forward(ctx context.Context, es blocks.Session, pos int, hidden []float32, n int) ([]float32, error) {
	r := &stepReq{es: es, pos: pos, hidden: hidden, n: n, answer: make(chan struct{})}
	select {
	case p.reqs <- r:
	case <-p.done:
		return nil, fmt.Errorf("%w: the step loop has stopped", blocks.ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("server: waiting for the step loop: %w", ctx.Err())
	}
	<-r.answer
	return r.out, r.err
}

// run is the loop. It owns the queue; every request it receives is
// answered, with an error when the loop stops.
func (p *stepper) run(ctx context.Context) {
	var queue []*stepReq
	defer func() {
		close(p.done)
		for _, r := range queue {
			r.err = fmt.Errorf("%w: the step loop has stopped", blocks.ErrClosed)
			close(r.answer)
		}
	}()
	d := p.engine.Info().DModel
	var last time.Duration // compute time of the previous batch
	// recent maps the sessions answered in the last recentBatches batches
	// to the number of the batch that answered them: their next steps are
	// probably on their way.
	recent := map[blocks.Session]int{}
	var answered []*stepReq // the requests a batch completed
	for batch := 0; ; batch++ {
		if len(queue) == 0 {
			select {
			case r := <-p.reqs:
				queue = append(queue, r)
			case <-ctx.Done():
				return
			}
		}
		for s, b := range recent {
			if b < batch-recentBatches {
				delete(recent, s)
			}
		}
		queue = p.gather(ctx, queue, recent, last/lingerFraction)
		p.waiting.Store(int64(len(queue)))
		if ctx.Err() != nil {
			return
		}
		take := planBatch(remaining(queue), p.budget)
		steps := make([]blocks.Step, 0, len(take))
		reqs := make([]*stepReq, 0, len(take))
		for i, k := range take {
			if k == 0 {
				continue
			}
			r := queue[i]
			steps = append(steps, blocks.Step{Session: r.es, Pos: r.pos + r.taken, Hidden: r.hidden[r.taken*d : (r.taken+k)*d], NTokens: k})
			reqs = append(reqs, r)
		}
		start := time.Now()
		res := p.engine.ForwardBatch(ctx, steps)
		last = time.Since(start)
		p.log.Debug("batch", "steps", len(steps), "rows", rowsOf(steps), "waiting", len(queue), "seconds", last.Seconds())
		if p.onBatch != nil {
			p.onBatch(rowsOf(steps), last)
		}
		for i, r := range reqs {
			if err := res[i].Err; err != nil {
				r.err = err
				continue
			}
			if r.out == nil && steps[i].NTokens < r.n {
				r.out = make([]float32, 0, r.n*d)
			}
			if r.out == nil {
				r.out = res[i].Hidden
			} else {
				r.out = append(r.out, res[i].Hidden...)
			}
			r.taken += steps[i].NTokens
			p.tokens.Add(int64(steps[i].NTokens))
		}
		kept := queue[:0]
		answered = answered[:0]
		for _, r := range queue {
			if r.err != nil || r.taken == r.n {
				recent[r.es] = batch
				if r.err != nil {
					r.out = nil
				}
				answered = append(answered, r)
				continue
			}
			kept = append(kept, r)
		}
		clear(queue[len(kept):])
		queue = kept
		// The queue's gauge before the answers: a client that has its
		// result sees its step gone from the queue.
		p.waiting.Store(int64(len(queue)))
		for _, r := range answered {
			close(r.answer)
		}
		clear(answered)
	}
}

// gather adds the steps waiting to the queue without blocking, then, while
// a session of recent has no step in the queue (its client is probably
// sending the next one), waits for more, at most linger in all.
func (p *stepper) gather(ctx context.Context, queue []*stepReq, recent map[blocks.Session]int, linger time.Duration) []*stepReq {
	for {
		select {
		case r := <-p.reqs:
			queue = append(queue, r)
			continue
		default:
		}
		break
	}
	missing := func() bool {
		queued := 0
		for _, r := range queue {
			if _, ok := recent[r.es]; ok {
				queued++
			}
		}
		return queued < len(recent)
	}
	if linger <= 0 || !missing() {
		return queue
	}
	t := time.NewTimer(linger)
	defer t.Stop()
	for missing() {
		select {
		case r := <-p.reqs:
			queue = append(queue, r)
		case <-t.C:
			return queue
		case <-ctx.Done():
			return queue
		}
	}
	return queue
}

// rowsOf counts the rows of a batch.
func rowsOf(steps []blocks.Step) int {
	n := 0
	for _, st := range steps {
		n += st.NTokens
	}
	return n
}

// remaining returns the rows each queued step has left.
func remaining(queue []*stepReq) []int {
	left := make([]int, len(queue))
	for i, r := range queue {
		left[i] = r.n - r.taken
	}
	return left
}

// planBatch chooses how many rows of each waiting step (left[i] rows to go,
// in arrival order) the next batch computes, within budget rows: first one
// row for each step in arrival order, so that every waiting session moves
// on, then as many more as fit, earliest first. At least one row is taken
// whenever a step waits.
func planBatch(left []int, budget int) []int {
	take := make([]int, len(left))
	budget = max(budget, 1)
	for i, n := range left {
		if budget == 0 {
			break
		}
		if n > 0 {
			take[i] = 1
			budget--
		}
	}
	for i, n := range left {
		k := min(n-take[i], budget)
		take[i] += k
		budget -= k
	}
	return take
}

// oneByOne runs the steps of a batch one after the other, for an engine
// without blocks.BatchEngine.
type oneByOne struct{ blocks.Engine }

func (e oneByOne) ForwardBatch(ctx context.Context, steps []blocks.Step) []blocks.StepResult {
	res := make([]blocks.StepResult, len(steps))
	for i, st := range steps {
		res[i].Hidden, res[i].Err = st.Session.Forward(ctx, st.Pos, st.Hidden, st.NTokens)
	}
	return res
}

// batchEngine returns e as a blocks.BatchEngine, running steps one by one
// when it is not one.
func batchEngine(e blocks.Engine) blocks.BatchEngine {
	if be, ok := e.(blocks.BatchEngine); ok {
		return be
	}
	return oneByOne{e}
}
