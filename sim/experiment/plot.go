package experiment

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// sweepLabels are the x-axis labels of the varied options.
var sweepLabels = map[string]string{
	"servers":       "number of servers C",
	"eta":           "fraction of A100 servers eta",
	"rate":          "request rate lambda (sessions/s)",
	"output-tokens": "output length l_max (tokens)",
}

// Plot draws one line per algorithm, time per token against the varied
// option (paper 003 Figs. 6-9), into path; the format follows its
// extension (.svg, .png, .pdf, .eps). Points where an algorithm failed in
// every run are left out. Errors wrap gonum/plot's, prefixed "sim: plot".
func (s *Sweep) Plot(path string, points []Point) error {
	if len(points) == 0 {
		return fmt.Errorf("sim: plot: no points")
	}
	p := plot.New()
	p.Title.Text = s.base.title() + ": time per token vs " + s.Vary
	p.X.Label.Text = sweepLabels[s.Vary]
	p.Y.Label.Text = "average time per token (s)"
	p.Legend.Top = true
	var lines []any
	for i := range points[0].Results {
		var xy plotter.XYs
		for _, pt := range points {
			r := pt.Results[i]
			if r.Runs > 0 {
				xy = append(xy, plotter.XY{X: pt.Value, Y: r.PerToken})
			}
		}
		if len(xy) > 0 {
			lines = append(lines, points[0].Results[i].Algorithm, xy)
		}
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return fmt.Errorf("sim: plot: %w", err)
	}
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("sim: plot: %w", err)
	}
	return nil
}
