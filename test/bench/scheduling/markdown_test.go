package scheduling

import (
	"strings"
	"testing"
	"time"
)

func TestMarkdown(t *testing.T) {
	opts := Options{Repetitions: 1, PlotLink: "img/scheduling.png"}.withDefaults()
	ours := Measurement{Config: Ours, Mode: Streamed, Repetition: 1, Pods: 2000, Bound: 2000, Duration: 12 * time.Second,
		Creating: 11 * time.Second, PodsPerSecond: 166.7, LatencyP50: time.Second, LatencyP99: 2 * time.Second, NodesUsed: 20}
	upstream := Measurement{Config: Upstream, Mode: Streamed, Repetition: 1, Pods: 2000, Bound: 2000, Duration: 40 * time.Second,
		Creating: 11 * time.Second, PodsPerSecond: 50, LatencyP50: 10 * time.Second, LatencyP99: 20 * time.Second, NodesUsed: 390}
	tests := []struct {
		name         string
		ours         Measurement
		want, reject []string
	}{
		{
			name: "targets met",
			ours: ours,
			want: []string{
				"| ours (rendered BinPacking) | 166.7 | 1.00 s | 2.00 s | 20 |",
				"| upstream defaults | 50.0 | 10.00 s | 20.00 s | 390 |",
				"| throughput ≥ 3× upstream defaults | 3.33× | yes |",
				"| nodes used ≤ 1.1× the ideal (19) | 20 (1.05×) | yes |",
				"ceil(2000 × 100m / 32 cores) = 7", "ceil(2000 / 110) = 19",
				"Creating the pods took 11.00 s of ours' 12.00 s",
				"(img/scheduling.png)",
			},
			reject: []string{"**no**", "With a backlog"},
		},
		{
			name: "targets missed",
			ours: func() Measurement {
				slow := ours
				slow.PodsPerSecond, slow.NodesUsed, slow.Duration = 100, 29, 20*time.Second
				return slow
			}(),
			want:   []string{"| 2.00× | **no** |", "| 29 (1.53×) | **no** |"},
			reject: []string{"Creating the pods took"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := &Result{Options: opts, IdealNodes: 19, Runs: []Measurement{tt.ours, upstream}}
			result.Ours, result.Upstream = summarize(result.Runs, Ours, Streamed), summarize(result.Runs, Upstream, Streamed)
			markdown := result.Markdown()
			for _, want := range tt.want {
				if !strings.Contains(markdown, want) {
					t.Errorf("the Markdown lacks %q:\n%s", want, markdown)
				}
			}
			for _, reject := range tt.reject {
				if strings.Contains(markdown, reject) {
					t.Errorf("the Markdown has %q:\n%s", reject, markdown)
				}
			}
		})
	}
}

func TestSampledNodes(t *testing.T) {
	tests := []struct{ nodes, want int }{{50, 50}, {100, 100}, {500, 230}, {5000, 500}, {10000, 500}}
	for _, tt := range tests {
		if got := sampledNodes(tt.nodes); got != tt.want {
			t.Errorf("sampledNodes(%d) = %d, want %d", tt.nodes, got, tt.want)
		}
	}
}
