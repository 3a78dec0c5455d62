package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
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
	if err := save(p, 8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("sim: plot: %w", err)
	}
	return nil
}

// save draws p into a w x h file at path (format from its extension) with
// the legend in a column right of the axes, so that it never covers a
// curve, and a margin between them that leaves room for the last x tick
// label.
func save(p *plot.Plot, w, h vg.Length, path string) (err error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	leg := p.Legend
	p.Legend = plot.NewLegend() // drawn below, outside the axes
	leg.Left, leg.Top = true, true
	margin := 0.3 * vg.Inch
	lw := leg.Rectangle(dc).Size().X + margin
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	leg.Draw(draw.Crop(dc, w-lw+margin/2, 0, 0, -0.4*vg.Inch))
	p.Legend = leg
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = c.WriteTo(f)
	return err
}
