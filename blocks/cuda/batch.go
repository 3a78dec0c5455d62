package cuda

import (
	"context"
	"fmt"

	"github.com/swarmllm/swarm/blocks"
)

var _ blocks.BatchEngine = (*engine)(nil)

// ForwardBatch runs the steps of distinct sessions together (see
// blocks.BatchEngine): the steps of sessions over the same sub-span share
// passes of at most maxChunk rows, so one read of each weight serves them
// all; a step longer than maxChunk runs alone in chunks. A step's rows are
// computed as alone: per-row kernels, its own caches, and matrix products
// in fixed column tiles (gemmCols).
func (e *engine) ForwardBatch(ctx context.Context, steps []blocks.Step) []blocks.StepResult {
	res := make([]blocks.StepResult, len(steps))
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[*session]bool{}
	var long []int
	groups := map[*session][]int{} // the first session of a sub-span -> its steps
	var order []*session
	bySpan := map[[2]int]*session{}
	for i, st := range steps {
		s, ok := st.Session.(*session)
		switch {
		case !ok || s.e != e:
			res[i].Err = fmt.Errorf("%w: step %d: a session of another engine", blocks.ErrArgument, i)
		case seen[s]:
			res[i].Err = fmt.Errorf("%w: step %d: session over %s listed twice in one batch", blocks.ErrArgument, i, s.sub)
		case s.closed || e.closed:
			res[i].Err = fmt.Errorf("%w: session over %s", blocks.ErrClosed, s.sub)
		default:
			res[i].Err = s.check(st.Pos, st.Hidden, st.NTokens)
		}
		if res[i].Err != nil {
			continue
		}
		seen[s] = true
		if st.NTokens > maxChunk {
			long = append(long, i)
			continue
		}
		key := [2]int{s.sub.Start, s.sub.End}
		first, ok := bySpan[key]
		if !ok {
			first = s
			bySpan[key] = s
			order = append(order, s)
		}
		groups[first] = append(groups[first], i)
	}
	d := e.info.DModel
	for _, first := range order {
		idx := groups[first]
		for len(idx) > 0 {
			// One pass: steps in order while their rows fit.
			var segs []seg
			var pass []int
			rows := 0
			for len(idx) > 0 && rows+steps[idx[0]].NTokens <= maxChunk {
				i := idx[0]
				idx = idx[1:]
				st := steps[i]
				segs = append(segs, seg{s: st.Session.(*session), pos: st.Pos, n: st.NTokens, off: rows})
				pass = append(pass, i)
				rows += st.NTokens
			}
			if err := ctx.Err(); err != nil {
				for _, i := range append(pass, idx...) {
					res[i].Err = fmt.Errorf("blocks: forward at position %d: %w", steps[i].Pos, err)
					steps[i].Session.(*session).length = steps[i].Pos
				}
				break
			}
			in := make([]float32, rows*d)
			for k, sg := range segs {
				copy(in[sg.off*d:], steps[pass[k]].Hidden)
				if sg.pos == 0 {
					sg.s.high = 0
				}
				sg.s.high = max(sg.s.high, sg.pos+sg.n)
			}
			out := make([]float32, rows*d)
			err := e.g.do(func() error { return e.forward(segs, in, out) })
			for k, sg := range segs {
				i := pass[k]
				if err != nil {
					res[i].Err = err
					sg.s.length = sg.pos
					continue
				}
				sg.s.length = sg.pos + sg.n
				res[i].Hidden = out[sg.off*d : (sg.off+sg.n)*d : (sg.off+sg.n)*d]
			}
		}
	}
	for _, i := range long {
		st := steps[i]
		res[i].Hidden, res[i].Err = st.Session.(*session).run(ctx, st.Pos, st.Hidden, st.NTokens)
	}
	return res
}
