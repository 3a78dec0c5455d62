package flops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// ErrConfig marks a Config field out of range; the message names the flag.
var ErrConfig = errors.New("flops: bad config")

// Config is what Measure reads; each field is a flag of `swarm bench flops`.
type Config struct {
	// Threads lists the goroutine counts measured (--threads), each >= 1.
	Threads []int
	// Passes is how many timed passes each count runs (--passes); the best
	// is reported.
	Passes int
	// Iters is the loop iterations of one goroutine in one pass.
	Iters int
	// Kernel is the loop (--kernel); empty means Best().
	Kernel Kernel
}

// DefaultConfig returns the defaults: 1..GOMAXPROCS goroutines, best of 5
// passes of 2^22 iterations (about 0.05 s each at 4 GHz with AVX-512).
func DefaultConfig() Config {
	var threads []int
	for n := 1; n <= runtime.GOMAXPROCS(0); n++ {
		threads = append(threads, n)
	}
	return Config{Threads: threads, Passes: 5, Iters: 1 << 22}
}

// Validate checks the fields.
func (c Config) Validate() error {
	_, known := kernels[c.Kernel]
	switch {
	case len(c.Threads) == 0 || slices.Min(c.Threads) < 1:
		return fmt.Errorf("%w: --threads %v, want one or more counts >= 1", ErrConfig, c.Threads)
	case c.Passes < 1:
		return fmt.Errorf("%w: --passes %d, want >= 1", ErrConfig, c.Passes)
	case c.Iters < 1:
		return fmt.Errorf("%w: iterations %d, want >= 1", ErrConfig, c.Iters)
	case c.Kernel != "" && !known:
		return fmt.Errorf("%w: --kernel %q is not available here, want one of %v", ErrConfig, c.Kernel, Available())
	}
	return nil
}

// Result is the rate measured with one goroutine count.
type Result struct {
	// Threads is the number of goroutines running the loop at once.
	Threads int `json:"threads"`
	// GFLOPs is the best pass's float32 operations per second, in 10^9/s
	// (a multiply-add counts 2).
	GFLOPs float64 `json:"gflop_s"`
}

// Report is the outcome of Measure.
type Report struct {
	// Kernel is the loop used; Available lists all on this machine.
	Kernel    Kernel   `json:"kernel"`
	Available []Kernel `json:"available"`
	Passes    int      `json:"passes"`
	// Results holds one entry per Config.Threads value, in order.
	Results []Result `json:"results"`
}

// Peak returns the highest rate of the report, float32 operations per
// second; 0 when it has no results.
func (r Report) Peak() float64 {
	var best float64
	for _, res := range r.Results {
		best = max(best, res.GFLOPs*1e9)
	}
	return best
}

// sink keeps the loops' results alive so no compiler can drop them.
var sink atomic.Uint32

// Measure runs the loop with each goroutine count of cfg.Threads, best of
// cfg.Passes passes. It returns ctx's error if ctx ends between passes,
// ErrConfig for a bad cfg.
func Measure(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	k := cfg.Kernel
	if k == "" {
		k = Best()
	}
	l := kernels[k]
	rep := Report{Kernel: k, Available: Available(), Passes: cfg.Passes}
	for _, n := range cfg.Threads {
		var best float64
		for range cfg.Passes {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			var wg sync.WaitGroup
			start := time.Now()
			for range n {
				wg.Go(func() {
					v := l.run(cfg.Iters)
					sink.Add(uint32(v))
				})
			}
			wg.Wait()
			if s := time.Since(start).Seconds(); s > 0 {
				best = max(best, float64(n)*float64(cfg.Iters)*float64(l.flopsPerIter)/s)
			}
		}
		rep.Results = append(rep.Results, Result{Threads: n, GFLOPs: best / 1e9})
	}
	return rep, nil
}

// WriteJSON writes the report as one indented JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes one row per goroutine count and the kernel used.
func (r Report) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "peak float32 multiply-add rate, registers only, best of %d passes, kernel %s (available: %v)\n",
		r.Passes, r.Kernel, r.Available); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "threads\tGFLOP/s\t")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%d\t%.1f\t\n", res.Threads, res.GFLOPs)
	}
	return tw.Flush()
}
