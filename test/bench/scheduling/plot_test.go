package scheduling

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func linearCurve(pods int, over time.Duration) []CurvePoint {
	curve := make([]CurvePoint, 0, pods+1)
	for bound := 0; bound <= pods; bound++ {
		curve = append(curve, CurvePoint{Elapsed: over * time.Duration(bound) / time.Duration(pods), Bound: bound})
	}
	return curve
}

func TestWritePlot(t *testing.T) {
	tests := []struct {
		name       string
		plotted    []series
		wantColors []color.RGBA
	}{
		{
			name: "both configurations",
			plotted: []series{
				{label: Ours.Description(), color: seriesColors[Ours], curve: linearCurve(2000, 12*time.Second)},
				{label: Upstream.Description(), color: seriesColors[Upstream], curve: linearCurve(2000, 40*time.Second)},
			},
			wantColors: []color.RGBA{seriesColors[Ours], seriesColors[Upstream]},
		},
		{name: "no runs: axes only", plotted: nil},
		{
			name:    "a run that bound nothing: a legend, no line",
			plotted: []series{{label: "ours", color: seriesColors[Ours], curve: []CurvePoint{{}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), PlotFile)
			if err := writePlot(path, tt.plotted); err != nil {
				t.Fatal(err)
			}
			file, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = file.Close() }()
			img, err := png.Decode(file)
			if err != nil {
				t.Fatalf("the plot is no PNG: %v", err)
			}
			if got, want := img.Bounds(), image.Rect(0, 0, plotWidth, plotHeight); got != want {
				t.Errorf("plot size = %v, want %v", got, want)
			}
			for _, want := range tt.wantColors {
				if count := countColor(img, want); count < 100 {
					t.Errorf("the plot has %d pixels of %v, want a line of them", count, want)
				}
			}
		})
	}
}

func countColor(img image.Image, want color.RGBA) int {
	count := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == want {
				count++
			}
		}
	}
	return count
}

// TestCurveXYs checks the points a curve is drawn through.
func TestCurveXYs(t *testing.T) {
	tests := []struct {
		name  string
		curve []CurvePoint
		want  [][2]float64
	}{
		{"none", nil, [][2]float64{}},
		{"a run that bound nothing", []CurvePoint{{}}, [][2]float64{{0, 0}}},
		{"binds", []CurvePoint{{}, {Elapsed: 250 * time.Millisecond, Bound: 1}, {Elapsed: 1500 * time.Millisecond, Bound: 2}},
			[][2]float64{{0, 0}, {0.25, 1}, {1.5, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := curveXYs(tt.curve)
			if len(got) != len(tt.want) {
				t.Fatalf("%d points, want %d", len(got), len(tt.want))
			}
			for i, want := range tt.want {
				if got[i].X != want[0] || got[i].Y != want[1] {
					t.Errorf("point %d = (%v, %v), want (%v, %v)", i, got[i].X, got[i].Y, want[0], want[1])
				}
			}
		})
	}
}

// TestNewPlotStartsAtZero checks the axes: from zero, and never empty.
func TestNewPlotStartsAtZero(t *testing.T) {
	for name, plotted := range map[string][]series{
		"no runs":  nil,
		"a run":    {{label: "ours", color: seriesColors[Ours], curve: linearCurve(40, 3*time.Second)}},
		"no binds": {{label: "ours", color: seriesColors[Ours], curve: []CurvePoint{{}}}},
	} {
		drawn, err := newPlot(plotted)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if drawn.X.Min != 0 || drawn.Y.Min != 0 || drawn.X.Max < 1 || drawn.Y.Max < 1 {
			t.Errorf("%s: axes x [%v, %v], y [%v, %v]", name, drawn.X.Min, drawn.X.Max, drawn.Y.Min, drawn.Y.Max)
		}
	}
}
