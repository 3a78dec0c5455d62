package blocks

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// parallelGrain is the least work (in multiply-adds) worth handing to
// another core: below it, waking a worker costs more than it saves.
const parallelGrain = 1 << 15

// pool is a fixed set of worker goroutines that help callers of
// parallelFor. Callers always work on their own job too, so a busy pool
// never blocks anyone: a helper that arrives after the work is gone just
// returns.
type pool struct {
	helpers chan *job
	workers int
}

// computePool is the process-wide pool, started on first use with
// GOMAXPROCS-1 workers that live as long as the process (like the runtime's
// own workers): every engine and head in a process shares the same cores, so
// they share one pool instead of oversubscribing them.
var computePool = sync.OnceValue(func() *pool {
	n := runtime.GOMAXPROCS(0) - 1
	p := &pool{helpers: make(chan *job, 4*max(n, 1)), workers: n}
	for range n {
		go p.work()
	}
	return p
})

// helperSpin is how long a helper keeps polling for the next job after
// one, before it parks: a decode step hands out a job per matrix every few
// hundred microseconds, and waking a parked goroutine (a futex wake, then
// the scheduler) costs tens of microseconds on a VM, during which the
// caller does the work alone. Polling yields the core to any other
// runnable goroutine (runtime.Gosched), and an idle process stops polling
// after helperSpin.
const helperSpin = 200 * time.Microsecond

func (p *pool) work() {
	for {
		var j *job
		select {
		case j = <-p.helpers:
		default:
			j = p.poll()
		}
		if j == nil {
			return
		}
		j.run()
	}
}

// poll waits for the next job: polling for helperSpin, then parked. It
// returns nil when the channel is closed.
func (p *pool) poll() *job {
	deadline := time.Now().Add(helperSpin)
	for n := 0; ; n++ {
		select {
		case j, ok := <-p.helpers:
			if !ok {
				return nil
			}
			return j
		default:
		}
		if n%64 == 63 && time.Now().After(deadline) {
			j, ok := <-p.helpers
			if !ok {
				return nil
			}
			return j
		}
		runtime.Gosched()
	}
}

// job is one parallelFor call: chunks of [0, n) handed out by an atomic
// counter.
type job struct {
	fn      func(lo, hi int)
	n       int
	chunk   int
	chunks  int64
	next    atomic.Int64
	pending atomic.Int64 // chunks not yet finished
	done    chan struct{}
}

func (j *job) run() {
	for {
		c := j.next.Add(1) - 1
		if c >= j.chunks {
			return
		}
		lo := int(c) * j.chunk
		j.fn(lo, min(lo+j.chunk, j.n))
		if j.pending.Add(-1) == 0 {
			close(j.done)
		}
	}
}

// parallelFor calls fn on disjoint ranges [lo, hi) covering [0, n), spread
// over the pool's workers and the calling goroutine, and returns when all
// calls have returned. cost is the work per index (in multiply-adds); small
// totals run inline.
func parallelFor(n, cost int, fn func(lo, hi int)) {
	p := computePool()
	if n <= 1 || p.workers == 0 || n*cost < 2*parallelGrain {
		fn(0, n)
		return
	}
	// About eight chunks per core balance uneven (or shared) cores without making
	// chunks so small that the counter becomes the bottleneck.
	parts := 8 * (p.workers + 1)
	chunk := max((n+parts-1)/parts, (parallelGrain+cost-1)/cost, 1)
	chunks := (n + chunk - 1) / chunk
	if chunks <= 1 {
		fn(0, n)
		return
	}
	j := &job{fn: fn, n: n, chunk: chunk, chunks: int64(chunks), done: make(chan struct{})}
	j.pending.Store(int64(chunks))
	for range min(p.workers, chunks-1) {
		select {
		case p.helpers <- j:
		default: // the pool is saturated by other callers: do more ourselves
		}
	}
	j.run()
	// The helpers finish their last chunks: poll briefly before parking,
	// for the same reason they poll for jobs.
	deadline := time.Now().Add(helperSpin)
	for n := 0; j.pending.Load() != 0; n++ {
		if n%64 == 63 && time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	<-j.done
}
