package convergence

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// ParseSizes parses a comma-separated list of swarm sizes ("16,32,64"),
// each an integer >= 2. The error quotes the first bad size.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("%q is not a swarm size >= 2", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// ForSizes returns a copy of p for each swarm size (Nodes), validated;
// errors wrap ErrBadParams.
func (p Params) ForSizes(sizes []int) ([]Params, error) {
	out := make([]Params, 0, len(sizes))
	for _, n := range sizes {
		p.Nodes = n
		if err := p.Validate(); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// AddFlags registers the `swarm registry bench` flags of p's fields
// (trials, transport, timeout, settle and the registry timing) on fs, with
// p's values as the defaults.
func (p *Params) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&p.Trials, "trials", p.Trials, "writes measured per swarm size, each by a different node (1..N-1)")
	fs.StringVar(&p.Transport, "transport", p.Transport, "libp2p transport between the nodes: tcp or quic")
	fs.DurationVar(&p.Timeout, "timeout", p.Timeout, "per trial: nodes still without the entry after this count as missing")
	fs.DurationVar(&p.Settle, "settle", p.Settle, "start the trials once the swarm's connection count has not changed for this long\n(discovery and the DHT have finished connecting the nodes); 0: right after the warm-up write")
	p.Registry.AddFlags(fs)
}

// Report is the JSON document of `swarm registry bench --json`: the
// machine the nodes shared and the results, durations in nanoseconds.
type Report struct {
	// CPUs is runtime.NumCPU() and GOMAXPROCS runtime.GOMAXPROCS(0).
	CPUs       int `json:"cpus"`
	GOMAXPROCS int `json:"gomaxprocs"`
	// Transport is Params.Transport.
	Transport string   `json:"transport"`
	Results   []Result `json:"results"`
}

// NewReport returns the report of results measured over transport on this
// machine.
func NewReport(transport string, results []Result) Report {
	return Report{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Transport: transport, Results: results}
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// tableRow is the layout of the table's columns.
const tableRow = "%6v %7v %12v %12v %12v %8v %10v %10v\n"

// WriteTableHeader writes the title (transport, CPU count, GOMAXPROCS) and
// the column names of the table WriteTableRow fills.
func WriteTableHeader(w io.Writer, transport string) error {
	if _, err := fmt.Fprintf(w, "registry convergence on loopback (%s), all nodes in one process; %d CPUs, GOMAXPROCS %d\n",
		transport, runtime.NumCPU(), runtime.GOMAXPROCS(0)); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, tableRow, "NODES", "TRIALS", "P50", "P95", "P100", "MISSING", "SETUP", "SETTLED")
	return err
}

// WriteTableRow writes one result: the swarm size, the trials, the median
// percentiles rounded to 10 µs, the missing count, and the setup and
// settle times rounded to 1 ms.
func WriteTableRow(w io.Writer, r Result) error {
	_, err := fmt.Fprintf(w, tableRow, r.Nodes, len(r.Trials), r.P50.Round(10*time.Microsecond),
		r.P95.Round(10*time.Microsecond), r.P100.Round(10*time.Microsecond), r.Missing,
		r.Setup.Round(time.Millisecond), r.Settled.Round(time.Millisecond))
	return err
}
