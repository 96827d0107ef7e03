package scheduling

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestIdealNodes(t *testing.T) {
	tests := []struct {
		name                                         string
		pods, podMilliCPU, nodeMilliCPU, podsPerNode int
		want                                         int
	}{
		{name: "the issue's setup: the pod count binds", pods: 2000, podMilliCPU: 100, nodeMilliCPU: 32000, podsPerNode: 110, want: 19},
		{name: "big pods: the CPU binds", pods: 2000, podMilliCPU: 1000, nodeMilliCPU: 32000, podsPerNode: 110, want: 63},
		{name: "whole pods only: 3 of 300m fit in 1 core, not 3.33", pods: 10, podMilliCPU: 300, nodeMilliCPU: 1000, podsPerNode: 110, want: 4},
		{name: "exactly full", pods: 220, podMilliCPU: 100, nodeMilliCPU: 32000, podsPerNode: 110, want: 2},
		{name: "one pod", pods: 1, podMilliCPU: 100, nodeMilliCPU: 32000, podsPerNode: 110, want: 1},
		{name: "no pods", pods: 0, podMilliCPU: 100, nodeMilliCPU: 32000, podsPerNode: 110, want: 0},
		{name: "CPU bound alone", pods: 2000, podMilliCPU: 100, nodeMilliCPU: 32000, want: 7},
		{name: "pod-count bound alone", pods: 2000, podsPerNode: 110, want: 19},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IdealNodes(tt.pods, tt.podMilliCPU, tt.nodeMilliCPU, tt.podsPerNode); got != tt.want {
				t.Errorf("IdealNodes(%d, %d, %d, %d) = %d, want %d", tt.pods, tt.podMilliCPU, tt.nodeMilliCPU, tt.podsPerNode, got, tt.want)
			}
		})
	}
}

func milliseconds(values ...int) []time.Duration {
	durations := make([]time.Duration, len(values))
	for i, value := range values {
		durations[i] = time.Duration(value) * time.Millisecond
	}
	return durations
}

func TestPercentile(t *testing.T) {
	oneToHundred := make([]int, 100)
	for i := range oneToHundred {
		oneToHundred[i] = 100 - i // descending: Percentile sorts
	}
	tests := []struct {
		name   string
		values []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "no values", values: nil, p: 50, want: 0},
		{name: "one value is every percentile", values: milliseconds(7), p: 99, want: 7 * time.Millisecond},
		{name: "p50 of 1..100", values: milliseconds(oneToHundred...), p: 50, want: 50 * time.Millisecond},
		{name: "p99 of 1..100", values: milliseconds(oneToHundred...), p: 99, want: 99 * time.Millisecond},
		{name: "p100 is the maximum", values: milliseconds(oneToHundred...), p: 100, want: 100 * time.Millisecond},
		{name: "nearest rank rounds up", values: milliseconds(4, 1, 3, 2), p: 50, want: 2 * time.Millisecond},
		{name: "p99 of four values is the largest", values: milliseconds(4, 1, 3, 2), p: 99, want: 4 * time.Millisecond},
		{name: "a tiny p is the minimum", values: milliseconds(4, 1, 3, 2), p: 0.1, want: time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.values, tt.p); got != tt.want {
				t.Errorf("Percentile(p%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileLeavesInputAlone(t *testing.T) {
	values := milliseconds(3, 1, 2)
	Percentile(values, 50)
	if diff := cmp.Diff(milliseconds(3, 1, 2), values); diff != "" {
		t.Errorf("Percentile reordered its input (-want +got):\n%s", diff)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name      string
		values    []float64
		want      float64
		wantIndex int
	}{
		{name: "none", values: nil, want: 0, wantIndex: -1},
		{name: "one", values: []float64{5}, want: 5, wantIndex: 0},
		{name: "odd count", values: []float64{9, 1, 5}, want: 5, wantIndex: 2},
		{name: "even count: mean of the middle two, index of the lower", values: []float64{4, 1, 3, 2}, want: 2.5, wantIndex: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := median(tt.values); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.values, got, tt.want)
			}
			if got := medianIndex(tt.values); got != tt.wantIndex {
				t.Errorf("medianIndex(%v) = %v, want %v", tt.values, got, tt.wantIndex)
			}
		})
	}
}

func TestBoundCurve(t *testing.T) {
	got := boundCurve(milliseconds(30, 10, 20))
	want := []CurvePoint{{}, {10 * time.Millisecond, 1}, {20 * time.Millisecond, 2}, {30 * time.Millisecond, 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("boundCurve (-want +got):\n%s", diff)
	}
}

func TestSummarizeRun(t *testing.T) {
	const run = "r1-ours-streamed"
	created := createdPods{requested: milliseconds(0, 10, 20, 30), last: 40 * time.Millisecond}
	boundAt := map[string]time.Duration{
		podName(run, 0): 100 * time.Millisecond,
		podName(run, 1): 110 * time.Millisecond,
		podName(run, 2): 500 * time.Millisecond,
		// pod 3 was never bound
	}
	nodeOf := map[string]string{podName(run, 0): "a", podName(run, 1): "a", podName(run, 2): "b"}
	tests := []struct {
		name string
		mode Mode
		want Measurement
	}{
		{
			name: "streamed: from the first create, with latencies",
			mode: Streamed,
			want: Measurement{Mode: Streamed, Pods: 4, Bound: 3, Duration: 500 * time.Millisecond, Creating: 40 * time.Millisecond,
				PodsPerSecond: 6, LatencyP50: 100 * time.Millisecond, LatencyP99: 480 * time.Millisecond, NodesUsed: 2},
		},
		{
			name: "backlog: from the first bind, the pods after it",
			mode: Backlog,
			want: Measurement{Mode: Backlog, Pods: 4, Bound: 3, Duration: 400 * time.Millisecond, Creating: 40 * time.Millisecond,
				PodsPerSecond: 5, NodesUsed: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarizeRun(run, tt.mode, created, boundAt, nodeOf)
			got.Curve = nil
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("summarizeRun (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	runs := []Measurement{
		{Config: Ours, Mode: Streamed, Pods: 10, Bound: 10, PodsPerSecond: 100, LatencyP50: time.Second, LatencyP99: 3 * time.Second, NodesUsed: 20},
		{Config: Upstream, Mode: Streamed, Pods: 10, Bound: 10, PodsPerSecond: 50, NodesUsed: 300},
		{Config: Ours, Mode: Streamed, Pods: 10, Bound: 9, PodsPerSecond: 120, LatencyP50: 2 * time.Second, LatencyP99: 2 * time.Second, NodesUsed: 21},
		{Config: Ours, Mode: Backlog, Pods: 10, Bound: 10, PodsPerSecond: 400, NodesUsed: 19},
	}
	want := Summary{Config: Ours, PodsPerSecond: 110, LatencyP50: 1500 * time.Millisecond, LatencyP99: 2500 * time.Millisecond,
		NodesUsed: 20.5, Runs: 2, Complete: false}
	if diff := cmp.Diff(want, summarize(runs, Ours, Streamed)); diff != "" {
		t.Errorf("summarize (-want +got):\n%s", diff)
	}
}
