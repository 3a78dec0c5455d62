package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// Coverage is how the SERVING servers of one model in a registry snapshot
// cover its blocks.
type Coverage struct {
	// Model is the model's name.
	Model string
	// Counts[b] is the number of SERVING servers hosting block b, for the
	// model's L blocks.
	Counts []int
	// Uncovered are the blocks no SERVING server hosts (swarm.Uncovered).
	Uncovered []swarm.Span
}

// BlockCoverage returns the coverage of each model named in the entries,
// sorted by model name. A model's L is the largest ModelBlocks advertised,
// or else the largest span end; only SERVING (routable, not SUSPECTED)
// servers count.
func BlockCoverage(entries []registry.Entry) []Coverage {
	nblocks := map[string]int{}
	for _, e := range entries {
		if e.Info.Model != "" {
			nblocks[e.Info.Model] = max(nblocks[e.Info.Model], e.Info.ModelBlocks, e.Info.Span.End)
		}
	}
	var out []Coverage
	for model, l := range nblocks {
		if l <= 0 {
			continue
		}
		whole := swarm.Span{Start: 0, End: l}
		c := Coverage{Model: model, Counts: make([]int, l)}
		var spans []swarm.Span
		for _, e := range entries {
			if e.Info.Model != model || e.State != swarm.StateServing {
				continue
			}
			s := e.Info.Span.Intersect(whole)
			spans = append(spans, s)
			for b := s.Start; b < s.End; b++ {
				c.Counts[b]++
			}
		}
		c.Uncovered = swarm.Uncovered(spans, whole)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Coverage) int { return strings.Compare(a.Model, b.Model) })
	return out
}

// String formats "MODEL  blocks 0..L-1: c0 c1 ...", plus the uncovered
// blocks: the line `swarm status` prints.
func (c Coverage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  blocks 0..%d:", c.Model, len(c.Counts)-1)
	for _, n := range c.Counts {
		b.WriteString(" " + strconv.Itoa(n))
	}
	var blocks []string
	for _, s := range c.Uncovered {
		for i := s.Start; i < s.End; i++ {
			blocks = append(blocks, strconv.Itoa(i))
		}
	}
	if len(blocks) > 0 {
		b.WriteString("  (no SERVING server for block " + strings.Join(blocks, ", ") + ")")
	}
	return b.String()
}
