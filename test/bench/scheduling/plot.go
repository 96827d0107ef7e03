package scheduling

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strconv"
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
}

// The plot's size and the margins around its axes, in pixels.
const (
	plotWidth    = 960
	plotHeight   = 560
	marginLeft   = 90
	marginRight  = 30
	marginTop    = 50
	marginBottom = 70
)

var (
	ink      = color.RGBA{A: 0xff}
	gridInk  = color.RGBA{R: 0xe0, G: 0xe0, B: 0xe0, A: 0xff}
	paperInk = color.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
)

// writePlot writes a PNG of bound pods over time, one line per series, to path.
func writePlot(path string, plotted []series) error {
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := png.Encode(file, plotImage(plotted)); err != nil {
		_ = file.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}

// plotImage draws the plot: axes with ticks and labels, a light grid, each series as a
// polyline and a legend.
func plotImage(plotted []series) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, plotWidth, plotHeight))
	draw.Draw(img, img.Bounds(), image.NewUniform(paperInk), image.Point{}, draw.Src)
	area := image.Rect(marginLeft, marginTop, plotWidth-marginRight, plotHeight-marginBottom)

	maxSeconds, maxBound := 0.0, 0
	for _, s := range plotted {
		for _, point := range s.curve {
			maxSeconds = max(maxSeconds, point.Elapsed.Seconds())
			maxBound = max(maxBound, point.Bound)
		}
	}
	xStep, xMax := niceAxis(maxSeconds)
	yStep, yMax := niceAxis(float64(maxBound))
	toScreen := func(seconds, bound float64) image.Point {
		return image.Pt(
			area.Min.X+int(math.Round(seconds/xMax*float64(area.Dx()))),
			area.Max.Y-int(math.Round(bound/yMax*float64(area.Dy()))))
	}

	for tick := 0.0; tick <= xMax+xStep/1000; tick += xStep {
		at := toScreen(tick, 0)
		drawLine(img, image.Pt(at.X, area.Min.Y), image.Pt(at.X, area.Max.Y), gridInk, 1)
		drawLine(img, at, image.Pt(at.X, at.Y+6), ink, 1)
		label := formatTick(tick)
		drawText(img, at.X-textWidth(label)/2, at.Y+12, label, ink)
	}
	for tick := 0.0; tick <= yMax+yStep/1000; tick += yStep {
		at := toScreen(0, tick)
		drawLine(img, image.Pt(area.Min.X, at.Y), image.Pt(area.Max.X, at.Y), gridInk, 1)
		drawLine(img, image.Pt(at.X-6, at.Y), at, ink, 1)
		label := formatTick(tick)
		drawText(img, at.X-10-textWidth(label), at.Y-textHeight/2, label, ink)
	}
	drawLine(img, image.Pt(area.Min.X, area.Max.Y), image.Pt(area.Max.X, area.Max.Y), ink, 2)
	drawLine(img, image.Pt(area.Min.X, area.Min.Y), image.Pt(area.Min.X, area.Max.Y), ink, 2)
	xLabel := "seconds since the first create"
	drawText(img, area.Min.X+(area.Dx()-textWidth(xLabel))/2, area.Max.Y+40, xLabel, ink)
	drawText(img, 10, 15, "pods bound", ink)

	for _, s := range plotted {
		for i := 1; i < len(s.curve); i++ {
			from, to := s.curve[i-1], s.curve[i]
			drawLine(img, toScreen(from.Elapsed.Seconds(), float64(from.Bound)), toScreen(to.Elapsed.Seconds(), float64(to.Bound)), s.color, 2)
		}
	}
	// The legend, in the bottom right corner of the plot area: rising curves leave it empty.
	legendWidth := 0
	for _, s := range plotted {
		legendWidth = max(legendWidth, 40+textWidth(s.label))
	}
	for i, s := range plotted {
		x := area.Max.X - 20 - legendWidth
		y := area.Max.Y - 20 - (len(plotted)-i)*(textHeight+10)
		drawLine(img, image.Pt(x, y+textHeight/2), image.Pt(x+30, y+textHeight/2), s.color, 3)
		drawText(img, x+40, y, s.label, ink)
	}
	return img
}

// niceAxis is a tick step of 1, 2 or 5 times a power of ten giving at most eight ticks up
// to maxValue, and the first tick at or above maxValue, where the axis ends.
func niceAxis(maxValue float64) (step, end float64) {
	if maxValue <= 0 {
		return 1, 1
	}
	magnitude := math.Pow(10, math.Floor(math.Log10(maxValue/10)))
	for _, factor := range []float64{1, 2, 5, 10} {
		step = factor * magnitude
		if maxValue/step <= 8 {
			break
		}
	}
	return step, math.Ceil(maxValue/step) * step
}

// formatTick writes a tick value with no more digits than it has.
func formatTick(value float64) string {
	return strconv.FormatFloat(value, 'f', -1, 64)
}

// drawLine draws a straight line from a to b (Bresenham's), width pixels thick.
func drawLine(img *image.RGBA, a, b image.Point, c color.Color, width int) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := sign(b.X-a.X), sign(b.Y-a.Y)
	err := dx + dy
	x, y := a.X, a.Y
	for {
		for ox := range width {
			for oy := range width {
				img.Set(x+ox-width/2, y+oy-width/2, c)
			}
		}
		if x == b.X && y == b.Y {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x += sx
		}
		if e2 <= dx {
			err += dx
			y += sy
		}
	}
}

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
