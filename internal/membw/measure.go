package membw

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
var ErrConfig = errors.New("membw: bad config")

// Config is what Measure reads; each field is a flag of `swarm bench
// memory`.
type Config struct {
	// Size is the buffer read, bytes (--size); it must be much larger than
	// the last-level cache for the figure to be memory's, not the cache's.
	Size int64
	// Threads lists the goroutine counts measured (--threads), each >= 1.
	Threads []int
	// Passes is how many times each count reads the whole buffer
	// (--passes); the best pass is reported.
	Passes int
	// Kernel is the read loop (--kernel); empty means Best().
	Kernel Kernel
}

// DefaultConfig returns the defaults: a 1 GiB buffer, 1..GOMAXPROCS
// goroutines, best of 5 passes, the widest kernel.
func DefaultConfig() Config {
	var threads []int
	for n := 1; n <= runtime.GOMAXPROCS(0); n++ {
		threads = append(threads, n)
	}
	return Config{Size: 1 << 30, Threads: threads, Passes: 5}
}

// Validate checks the fields.
func (c Config) Validate() error {
	switch {
	case c.Size < 1<<20:
		return fmt.Errorf("%w: --size %d bytes, want >= 1 MiB (and much more than the last-level cache)", ErrConfig, c.Size)
	case len(c.Threads) == 0 || slices.Min(c.Threads) < 1:
		return fmt.Errorf("%w: --threads %v, want one or more counts >= 1", ErrConfig, c.Threads)
	case c.Passes < 1:
		return fmt.Errorf("%w: --passes %d, want >= 1", ErrConfig, c.Passes)
	case c.Kernel != "" && kernels[c.Kernel] == nil:
		return fmt.Errorf("%w: --kernel %q is not available here, want one of %v", ErrConfig, c.Kernel, Available())
	}
	return nil
}

// Result is the bandwidth measured with one goroutine count.
type Result struct {
	// Threads is the number of goroutines reading disjoint parts of the
	// buffer at the same time.
	Threads int `json:"threads"`
	// GBs is the best pass's bytes read per second, in 10^9 bytes/s.
	GBs float64 `json:"gb_s"`
}

// Report is the outcome of Measure.
type Report struct {
	// Kernel is the read loop used; Available lists all on this machine.
	Kernel    Kernel   `json:"kernel"`
	Available []Kernel `json:"available"`
	// SizeBytes is the buffer size and Passes the passes per count.
	SizeBytes int64 `json:"size_bytes"`
	Passes    int   `json:"passes"`
	// Results holds one entry per Config.Threads value, in order.
	Results []Result `json:"results"`
}

// Best returns the highest bandwidth of the report, bytes/s; 0 when it
// has no results.
func (r Report) Best() float64 {
	var best float64
	for _, res := range r.Results {
		best = max(best, res.GBs*1e9)
	}
	return best
}

// Measure allocates and fills a buffer of cfg.Size bytes, then reads it
// with each goroutine count of cfg.Threads, best of cfg.Passes passes.
// It returns ctx's error if ctx ends between passes, ErrConfig for a bad
// cfg.
func Measure(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	k := cfg.Kernel
	if k == "" {
		k = Best()
	}
	buf := make([]byte, cfg.Size)
	for i := range buf {
		buf[i] = byte(i*7 + i>>12) // touch every page; not all zeros
	}
	rep := Report{Kernel: k, Available: Available(), SizeBytes: cfg.Size, Passes: cfg.Passes}
	for _, n := range cfg.Threads {
		bps, err := ReadBandwidth(ctx, buf, n, cfg.Passes, k)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, Result{Threads: n, GBs: bps / 1e9})
	}
	return rep, nil
}

// sink keeps the checksums alive so no compiler can drop the reads; it
// is atomic because ReadBandwidth may run concurrently.
var sink atomic.Uint64

// ReadBandwidth reads buf with workers goroutines, each over a contiguous
// 1/workers of it through kernel k, passes times, and returns the best
// pass's bytes per second. Errors: k not available, workers or passes < 1,
// ctx ended between passes.
func ReadBandwidth(ctx context.Context, buf []byte, workers, passes int, k Kernel) (float64, error) {
	f := kernels[k]
	switch {
	case f == nil:
		return 0, fmt.Errorf("membw: kernel %q is not available here, want one of %v", k, Available())
	case workers < 1 || passes < 1:
		return 0, fmt.Errorf("%w: workers %d and passes %d, want >= 1", ErrConfig, workers, passes)
	}
	sums := make([]uint64, workers)
	var best float64
	for range passes {
		if err := ctx.Err(); err != nil {
			return best, err
		}
		var wg sync.WaitGroup
		start := time.Now()
		for w := range workers {
			lo, hi := w*len(buf)/workers, (w+1)*len(buf)/workers
			wg.Go(func() { sums[w] = checksum(f, buf[lo:hi]) })
		}
		wg.Wait()
		if s := time.Since(start).Seconds(); s > 0 {
			best = max(best, float64(len(buf))/s)
		}
		for _, s := range sums {
			sink.Add(s)
		}
	}
	return best, nil
}

// WriteJSON writes the report as one indented JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes one row per goroutine count and the kernel used.
func (r Report) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "read bandwidth of a %d MiB buffer, best of %d passes, kernel %s (available: %v)\n",
		r.SizeBytes>>20, r.Passes, r.Kernel, r.Available); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "threads\tGB/s\t")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%d\t%.1f\t\n", res.Threads, res.GBs)
	}
	return tw.Flush()
}
