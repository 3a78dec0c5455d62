package blocks

import (
	"context"
	"fmt"
	"sync"
)

var _ BatchEngine = (*cpuEngine)(nil)

// batchScratch recycles the working memory of ForwardBatch calls.
var batchScratch = sync.Pool{New: func() any { return new(scratch) }}

// batchRow is one step of a ForwardBatch call once checked: its session and
// where its rows lie in the batch.
type batchRow struct {
	i   int // index in the steps
	s   *cpuSession
	off int // first row in the batch
	n   int
	pos int
}

// ForwardBatch runs the steps of distinct sessions in one pass over the
// weights: for each block of the span, the rows of every step whose session
// covers the block are multiplied together (see BatchEngine).
func (e *cpuEngine) ForwardBatch(ctx context.Context, steps []Step) []StepResult {
	res := make([]StepResult, len(steps))
	rows := make([]batchRow, 0, len(steps))
	seen := make(map[*cpuSession]bool, len(steps))
	total := 0
	for i, st := range steps {
		s, ok := st.Session.(*cpuSession)
		switch {
		case !ok || s.e != e:
			res[i].Err = fmt.Errorf("%w: step %d: a session of another engine", ErrArgument, i)
		case seen[s]:
			res[i].Err = fmt.Errorf("%w: step %d: session over %s listed twice in one batch", ErrArgument, i, s.span)
		default:
			res[i].Err = s.check(st.Pos, st.Hidden, st.NTokens)
		}
		if res[i].Err != nil {
			continue
		}
		seen[s] = true
		rows = append(rows, batchRow{i: i, s: s, off: total, n: st.NTokens, pos: st.Pos})
		total += st.NTokens
	}
	if len(rows) == 0 {
		return res
	}

	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		for _, r := range rows {
			res[r.i].Err = fmt.Errorf("%w: engine for span %s", ErrClosed, e.span)
		}
		return res
	}
	info := &e.info
	d := info.DModel
	x := make([]float32, total*d)
	for _, r := range rows {
		r.s.length = r.pos // truncate: positions >= pos are recomputed
		copy(x[r.off*d:], steps[r.i].Hidden)
	}

	sc := batchScratch.Get().(*scratch)
	defer batchScratch.Put(sc)
	sc.grow(*info, total)
	// part holds the rows of the sessions that cover a block, when not all do.
	var part []float32
	segs := make([]seg, 0, len(rows))
	for b := e.span.Start; b < e.span.End; b++ {
		segs = segs[:0]
		n := 0
		for _, r := range rows {
			if r.s.span.Contains(b) {
				segs = append(segs, seg{c: &r.s.caches[b-r.s.span.Start], off: n, n: r.n, pos: r.pos})
				n += r.n
			}
		}
		if n == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			for _, r := range rows {
				res[r.i].Err = fmt.Errorf("blocks: forward at position %d: %w", r.pos, err)
			}
			return res
		}
		for _, g := range segs {
			e.ropeRows(sc, g.off, g.pos, g.n)
		}
		l := e.layers[b-e.span.Start]
		if n == total {
			e.forwardBlock(l, segs, sc, x, n)
			continue
		}
		// Gather the covering sessions' rows, run them, scatter them back.
		part = part[:0]
		for _, r := range rows {
			if r.s.span.Contains(b) {
				part = append(part, x[r.off*d:(r.off+r.n)*d]...)
			}
		}
		e.forwardBlock(l, segs, sc, part, n)
		k := 0
		for _, r := range rows {
			if r.s.span.Contains(b) {
				copy(x[r.off*d:(r.off+r.n)*d], part[k*d:(k+r.n)*d])
				k += r.n
			}
		}
	}
	for _, r := range rows {
		r.s.length = r.pos + r.n
		res[r.i].Hidden = x[r.off*d : (r.off+r.n)*d : (r.off+r.n)*d]
	}
	return res
}
