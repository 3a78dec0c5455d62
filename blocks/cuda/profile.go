package cuda

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// profileEnv names the environment variable that turns on the engine's
// timing profile, a tool for tuning the backend on a GPU machine:
//
//	SWARM_CUDA_PROFILE=pass  per pass, the host time spent queueing its
//	                         operations and the time then waited for the
//	                         device (no extra synchronization)
//	SWARM_CUDA_PROFILE=ops   per operation (kernel, matrix product,
//	                         upload), its time with a synchronization after
//	                         each (slower passes; the shares are what count)
//
// Each engine prints its table to stderr when it is closed. Rows are keyed
// by the pass's token count (1, 2-16, 17-64).
const profileEnv = "SWARM_CUDA_PROFILE"

// profile accumulates durations per label (used under engine.mu).
type profile struct {
	ops  bool // sync after each operation
	rows map[string]*profileRow
}

type profileRow struct {
	count int
	total time.Duration
}

// newProfile returns the profile SWARM_CUDA_PROFILE asks for, or nil.
func newProfile() *profile {
	switch os.Getenv(profileEnv) {
	case "pass":
		return &profile{rows: map[string]*profileRow{}}
	case "ops":
		return &profile{ops: true, rows: map[string]*profileRow{}}
	}
	return nil
}

// add counts one occurrence of label taking d.
func (p *profile) add(label string, d time.Duration) {
	r := p.rows[label]
	if r == nil {
		r = &profileRow{}
		p.rows[label] = r
	}
	r.count++
	r.total += d
}

// bucket names the token-count class of a pass of n tokens.
func bucket(n int) string {
	switch {
	case n == 1:
		return "n=1"
	case n <= gemmCols:
		return fmt.Sprintf("n=2-%d", gemmCols)
	}
	return fmt.Sprintf("n=%d-%d", gemmCols+1, maxChunk)
}

// write prints the rows, largest total first.
func (p *profile) write(w io.Writer, title string) {
	labels := make([]string, 0, len(p.rows))
	for l := range p.rows {
		labels = append(labels, l)
	}
	slices.SortFunc(labels, func(a, b string) int { return int(p.rows[b].total - p.rows[a].total) })
	var sb strings.Builder
	mode := "pass"
	if p.ops {
		mode = "ops"
	}
	fmt.Fprintf(&sb, "cuda profile (%s) of %s:\n", mode, title)
	for _, l := range labels {
		r := p.rows[l]
		fmt.Fprintf(&sb, "  %-40s %8d calls %10.3f ms %9.2f us/call\n", l, r.count, float64(r.total)/1e6, float64(r.total)/1e3/float64(r.count))
	}
	io.WriteString(w, sb.String())
}
