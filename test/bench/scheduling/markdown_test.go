package scheduling

import (
	"strings"
	"testing"
	"time"
)

func TestMarkdown(t *testing.T) {
	opts := Options{Repetitions: 1, PlotLink: "img/scheduling.png"}.withDefaults()
	ours := Measurement{Config: Ours, Mode: Streamed, Repetition: 1, Pods: 2000, Bound: 2000, Duration: 12 * time.Second,
		Creating: 11 * time.Second, PodsPerSecond: 166.7, LatencyP50: time.Second, LatencyP99: 2 * time.Second, NodesUsed: 20,
		ContentType: protobuf, BusyBefore: 0.05}
	upstream := Measurement{Config: Upstream, Mode: Streamed, Repetition: 1, Pods: 2000, Bound: 2000, Duration: 40 * time.Second,
		Creating: 11 * time.Second, PodsPerSecond: 50, LatencyP50: 10 * time.Second, LatencyP99: 20 * time.Second, NodesUsed: 390,
		ContentType: protobuf, BusyBefore: -1}
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
				"Both schedulers' clients spoke `application/vnd.kubernetes.protobuf`",
				"The nodes are not kwok's", "500 writes every 50 s",
				"*16 create requests in flight.*",
				"once fewer than 0.3 of the machine's cores are busy over a second",
				"| 1 | ours (rendered BinPacking) | streamed | 2000 of 2000 | 12.00 s | 11.00 s | 166.7 | 1.00 s | 2.00 s | 20 | 0.05 |",
				"| 390 | unknown |",
			},
			reject: []string{"**no**", "With a backlog", "Other processes kept"},
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
		{
			name: "a busy machine",
			ours: func() Measurement {
				busy := ours
				busy.BusyBefore = 0.8
				return busy
			}(),
			want: []string{"Other processes kept the machine busy (0.3 cores or more after 15 s of waiting) before run 1 of ours (rendered BinPacking) (streamed, 0.80 cores):"},
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

const protobuf = "application/vnd.kubernetes.protobuf"

func TestContentTypesText(t *testing.T) {
	run := func(config Config, contentType string) Measurement {
		return Measurement{Config: config, ContentType: contentType}
	}
	tests := []struct {
		name string
		runs []Measurement
		want string
	}{
		{
			name: "both protobuf",
			runs: []Measurement{run(Ours, protobuf), run(Upstream, protobuf), run(Ours, protobuf)},
			want: "Both schedulers' clients spoke `" + protobuf + "`, by the configuration each logged",
		},
		{
			name: "ours JSON",
			runs: []Measurement{run(Ours, "application/json"), run(Upstream, protobuf)},
			want: "spoke `application/json` (ours) and `" + protobuf + "` (upstream's defaults)",
		},
		{
			name: "runs that differ are all listed",
			runs: []Measurement{run(Ours, protobuf), run(Ours, "application/json"), run(Upstream, protobuf)},
			want: "spoke `" + protobuf + "` or `application/json` (ours)",
		},
		{
			name: "not logged",
			runs: []Measurement{run(Ours, protobuf), run(Upstream, "")},
			want: "not known for every run: ours `" + protobuf + "`, upstream's defaults (not logged)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := contentTypesText(tt.runs); !strings.Contains(got, tt.want) {
				t.Errorf("contentTypesText = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

func TestCreateWorkersText(t *testing.T) {
	tests := []struct {
		workers      int
		want, reject string
	}{
		{workers: defaultCreateWorkers, want: "*16 create requests in flight.* Creating pods is limited", reject: "Chosen"},
		{workers: 64, want: "*64 create requests in flight.* Chosen for this benchmark, against a default of 16: Creating"},
	}
	for _, tt := range tests {
		got := createWorkersText(tt.workers)
		if !strings.Contains(got, tt.want) {
			t.Errorf("createWorkersText(%d) = %q, want it to contain %q", tt.workers, got, tt.want)
		}
		if tt.reject != "" && strings.Contains(got, tt.reject) {
			t.Errorf("createWorkersText(%d) = %q, want no %q", tt.workers, got, tt.reject)
		}
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
