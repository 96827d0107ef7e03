package scheduling

import (
	"image"
	"image/color"
	"image/png"
	"maps"
	"os"
	"path/filepath"
	"strings"
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

func TestNiceAxis(t *testing.T) {
	tests := []struct {
		max               float64
		wantStep, wantEnd float64
	}{
		{max: 2000, wantStep: 500, wantEnd: 2000},
		{max: 41.2, wantStep: 10, wantEnd: 50},
		{max: 12.3, wantStep: 2, wantEnd: 14},
		{max: 0.7, wantStep: 0.1, wantEnd: 0.7},
		{max: 0, wantStep: 1, wantEnd: 1},
	}
	for _, tt := range tests {
		step, end := niceAxis(tt.max)
		if !near(step, tt.wantStep) || !near(end, tt.wantEnd) {
			t.Errorf("niceAxis(%v) = %v, %v; want %v, %v", tt.max, step, end, tt.wantStep, tt.wantEnd)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestGlyphsAreFiveBySeven(t *testing.T) {
	checked := maps.Clone(glyphs)
	checked[0] = missingGlyph
	for char, glyph := range checked {
		rows := strings.Fields(glyph)
		if len(rows) != glyphHeight {
			t.Errorf("glyph %q has %d rows, want %d", char, len(rows), glyphHeight)
		}
		for _, row := range rows {
			if len(row) != glyphWidth || strings.Trim(row, "#.") != "" {
				t.Errorf("glyph %q has row %q, want %d of '#' and '.'", char, row, glyphWidth)
			}
		}
	}
}

func TestEveryLabelHasGlyphs(t *testing.T) {
	labels := []string{Ours.Description() + " (run 2)", Upstream.Description(), "seconds since the first create", "pods bound", "0.25"}
	for _, label := range labels {
		for _, char := range label {
			if _, ok := glyphs[char]; !ok {
				t.Errorf("no glyph for %q of label %q", char, label)
			}
		}
	}
}
