package scheduling

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one curve of the plot.
type series struct {
	label string
	color color.RGBA
	curve []CurvePoint
}

// seriesColors tells the configurations apart in the plot.
var seriesColors = map[Config]color.RGBA{
	Ours:     {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	Upstream: {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	// Routed pods follow the same curve as Ours, or nearly: dashed would be clearer, a
	// lighter blue will do.
	OursRouted: {R: 0x9e, G: 0xc9, B: 0xe2, A: 0xff}, // light blue
}

// The plot's size in pixels, at plotDPI: the width of a page in docs/.
const (
	plotWidth  = 960
	plotHeight = 560
	plotDPI    = 96
)

// writePlot writes a PNG of bound pods over time, one line per series, to path.
func writePlot(path string, plotted []series) error {
	drawn, err := newPlot(plotted)
	if err != nil {
		return err
	}
	canvas := vgimg.PngCanvas{Canvas: vgimg.NewWith(
		vgimg.UseWH(pixels(plotWidth), pixels(plotHeight)), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))}
	// A margin around the axes, so that the last tick labels are not cut at the edges.
	drawn.Draw(draw.Crop(draw.New(canvas), pixels(12), -pixels(24), pixels(8), -pixels(16)))
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if _, err := canvas.WriteTo(file); err != nil {
		_ = file.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}

// pixels is a length of n pixels at plotDPI.
func pixels(n int) vg.Length { return vg.Length(n) * vg.Inch / plotDPI }

// newPlot lays out the plot: a grid, each series as a line, axes from zero, and the
// legend in the bottom right corner, which rising curves leave empty.
func newPlot(plotted []series) (*plot.Plot, error) {
	drawn := plot.New()
	drawn.X.Label.Text = "seconds since the first create"
	drawn.Y.Label.Text = "pods bound"
	drawn.Add(plotter.NewGrid())
	drawn.Legend.Top, drawn.Legend.Left = false, false
	drawn.Legend.XOffs, drawn.Legend.YOffs = -pixels(20), pixels(20)
	for _, s := range plotted {
		line, err := plotter.NewLine(curveXYs(s.curve))
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", s.label, err)
		}
		line.Color, line.Width = s.color, vg.Points(2)
		drawn.Add(line)
		drawn.Legend.Add(s.label, line)
	}
	// From zero, whatever the data: a count that starts late or stays flat must show so.
	drawn.X.Min, drawn.Y.Min = 0, 0
	drawn.X.Max, drawn.Y.Max = max(drawn.X.Max, 1), max(drawn.Y.Max, 1)
	return drawn, nil
}

// curveXYs are a curve's points: seconds since the first create, and pods bound by then.
func curveXYs(curve []CurvePoint) plotter.XYs {
	points := make(plotter.XYs, len(curve))
	for i, point := range curve {
		points[i].X, points[i].Y = point.Elapsed.Seconds(), float64(point.Bound)
	}
	return points
}
