package outcome

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

// The plots' files, in OutputDir.
const (
	UtilisationPlot  = "outcome-utilisation.png"
	DistributionPlot = "outcome-distribution.png"
)

// The plots' size at plotDPI: the width of a page in docs/.
const (
	plotWidth   = 960
	panelHeight = 240
	plotDPI     = 96
)

var (
	nodeColor      = color.RGBA{R: 0x9e, G: 0xc9, B: 0xe2, A: 0xff} // light blue: one node
	meanColor      = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue: mean of the nodes used
	thresholdColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red: the risk threshold
	targetColor    = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff} // green: the profile's target
	outageColor    = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff} // grey: Prometheus down
)

// armColors tell the arms apart in the distribution plot, in Arms' order.
var armColors = []color.RGBA{
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // default scheduler: grey
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // BinPacking: orange
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // TargetLoadPacking 40 %: blue
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // TargetLoadPacking 60 %: cyan
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // TargetLoadPacking 40 %, multiplier 1.5: olive
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // LoadVariationRiskBalancing: green
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // LowRiskOverCommitment: purple
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // outage, ScoreByRequests: red
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // outage, UseLastMetrics: brown
}

// WritePlots writes the utilisation over time of every arm's nodes (a panel each) and the
// final distribution (one line per arm) into dir.
func (r *Result) WritePlots(dir string) error {
	panels := make([][]*plot.Plot, (len(r.Arms)+1)/2)
	for i, arm := range r.Arms {
		panel, err := r.utilisationPanel(arm)
		if err != nil {
			return err
		}
		if panels[i/2] == nil {
			panels[i/2] = make([]*plot.Plot, 2)
		}
		panels[i/2][i%2] = panel
	}
	if err := writeTiles(dir+"/"+UtilisationPlot, panels); err != nil {
		return err
	}
	distribution, err := r.distributionPlot()
	if err != nil {
		return err
	}
	return writeTiles(dir+"/"+DistributionPlot, [][]*plot.Plot{{distribution}})
}

// utilisationPanel is every node of arm's CPU utilisation over time, the mean of the
// nodes used, the risk threshold, the target of a TargetLoadPacking arm, and the outage.
func (r *Result) utilisationPanel(arm Arm) (*plot.Plot, error) {
	record := r.Records[arm.Key]
	panel := plot.New()
	summary := r.Summary(arm)
	panel.Title.Text = fmt.Sprintf("%s: %d nodes used", arm.Title, summary.NodesUsed)
	panel.X.Label.Text, panel.Y.Label.Text = "minutes", "node CPU %"
	panel.Add(plotter.NewGrid())
	minutes := r.Options.RunFor.Minutes()
	top := 100.0
	for _, sample := range record.Samples {
		for _, cpu := range sample.CPU {
			top = max(top, 100*cpu)
		}
	}
	if arm.Outage {
		from, to := r.Options.OutageFrom.Minutes(), r.Options.OutageTo.Minutes()
		shade, err := plotter.NewPolygon(plotter.XYs{{X: from, Y: 0}, {X: to, Y: 0}, {X: to, Y: top}, {X: from, Y: top}})
		if err != nil {
			return nil, err
		}
		shade.Color, shade.Width = outageColor, 0
		panel.Add(shade)
	}
	for _, node := range r.loadNodes(arm) {
		points := make(plotter.XYs, len(record.Samples))
		for i, sample := range record.Samples {
			points[i] = plotter.XY{X: sample.Elapsed.Minutes(), Y: 100 * sample.CPU[node]}
		}
		line, err := plotter.NewLine(points)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = nodeColor, vg.Points(0.6)
		panel.Add(line)
	}
	meanPoints := make(plotter.XYs, len(record.Samples))
	for i, sample := range record.Samples {
		sum, used := 0.0, 0
		for node, cpu := range sample.CPU {
			if sample.Pods[node] > 0 {
				sum, used = sum+cpu, used+1
			}
		}
		meanPoints[i] = plotter.XY{X: sample.Elapsed.Minutes()}
		if used > 0 {
			meanPoints[i].Y = 100 * sum / float64(used)
		}
	}
	if err := addLine(panel, meanPoints, meanColor, 2, nil); err != nil {
		return nil, err
	}
	threshold := 100 * r.Options.Threshold
	if err := addLine(panel, plotter.XYs{{X: 0, Y: threshold}, {X: minutes, Y: threshold}}, thresholdColor, 1, []vg.Length{vg.Points(4), vg.Points(3)}); err != nil {
		return nil, err
	}
	if target := arm.targetPercent(); target > 0 {
		if err := addLine(panel, plotter.XYs{{X: 0, Y: target}, {X: minutes, Y: target}}, targetColor, 1, []vg.Length{vg.Points(4), vg.Points(3)}); err != nil {
			return nil, err
		}
	}
	panel.X.Min, panel.X.Max, panel.Y.Min, panel.Y.Max = 0, minutes, 0, top
	return panel, nil
}

// loadNodes are arm's nodes that ran a pod at some sample: the others stay at zero and
// would only hide the axis.
func (r *Result) loadNodes(arm Arm) []string {
	var nodes []string
	for _, node := range nodeNames(arm, r.Options.NodesPerPool) {
		for _, sample := range r.Records[arm.Key].Samples {
			if sample.Pods[node] > 0 {
				nodes = append(nodes, node)
				break
			}
		}
	}
	return nodes
}

// distributionPlot is each arm's nodes' final utilisation, highest first.
func (r *Result) distributionPlot() (*plot.Plot, error) {
	drawn := plot.New()
	drawn.Title.Text = fmt.Sprintf("Node CPU utilisation at the end (mean of the last %v), highest first", r.Options.FinalWindow)
	drawn.X.Label.Text, drawn.Y.Label.Text = "node, by utilisation", "node CPU %"
	drawn.Add(plotter.NewGrid())
	drawn.Legend.Top = true
	drawn.Legend.XOffs = -vg.Points(10)
	for i, arm := range r.Arms {
		final := r.Summary(arm).Final
		points := make(plotter.XYs, len(final))
		for j, value := range final {
			points[j] = plotter.XY{X: float64(j + 1), Y: 100 * value}
		}
		line, err := plotter.NewLine(points)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = armColors[i%len(armColors)], vg.Points(1.5)
		drawn.Add(line)
		drawn.Legend.Add(arm.Title, line)
	}
	threshold := 100 * r.Options.Threshold
	if err := addLine(drawn, plotter.XYs{{X: 1, Y: threshold}, {X: float64(r.Options.NodesPerPool), Y: threshold}}, thresholdColor, 1, []vg.Length{vg.Points(4), vg.Points(3)}); err != nil {
		return nil, err
	}
	drawn.X.Min, drawn.X.Max, drawn.Y.Min = 1, float64(r.Options.NodesPerPool), 0
	drawn.Y.Max = max(drawn.Y.Max, 100)
	return drawn, nil
}

func addLine(p *plot.Plot, points plotter.XYs, c color.Color, width float64, dashes []vg.Length) error {
	line, err := plotter.NewLine(points)
	if err != nil {
		return err
	}
	line.Color, line.Width, line.Dashes = c, vg.Points(width), dashes
	p.Add(line)
	return nil
}

// writeTiles writes the plots, laid out in rows, as one PNG.
func writeTiles(path string, rows [][]*plot.Plot) error {
	columns := 0
	for _, row := range rows {
		columns = max(columns, len(row))
	}
	height := panelHeight * len(rows)
	if len(rows) == 1 && columns == 1 {
		height = 2 * panelHeight
	}
	canvas := vgimg.NewWith(vgimg.UseWH(pixels(plotWidth), pixels(height)), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	tiles := draw.Tiles{Rows: len(rows), Cols: columns, PadX: pixels(16), PadY: pixels(16),
		PadTop: pixels(8), PadBottom: pixels(8), PadLeft: pixels(8), PadRight: pixels(16)}
	aligned := plot.Align(rows, tiles, draw.New(canvas))
	for i, row := range rows {
		for j, panel := range row {
			if panel != nil {
				panel.Draw(aligned[i][j])
			}
		}
	}
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: canvas}).WriteTo(file); err != nil {
		_ = file.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return file.Close()
}

// pixels is a length of n pixels at plotDPI.
func pixels(n int) vg.Length { return vg.Length(n) * vg.Inch / plotDPI }
