package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWriteResourceMetrics reads what podrunner writes with Prometheus' own text parser:
// the five families metrics-server decodes, each sample with its pod's labels and the time
// of measuring, which metrics-server needs to make a rate of CPU time.
func TestWriteResourceMetrics(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	started := at.Add(-90 * time.Second)
	var text bytes.Buffer
	writeResourceMetrics(&text, nodeUsage{cpuSeconds: 1234.5, workingSetBytes: 8 << 30}, []containerUsage{
		{namespace: "demo", pod: "packer-scheduler-b", container: "scheduler", cpuSeconds: 0.25, workingSetBytes: 30 << 20, started: started},
		{namespace: "demo", pod: "packer-scheduler-a", container: "scheduler", cpuSeconds: 1.5, workingSetBytes: 40 << 20, started: started},
	}, at)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(&text)
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v\n%s", err, text.String())
	}
	type sample struct {
		Pod   string
		Value float64
		At    int64
	}
	got := map[string][]sample{}
	for name, family := range families {
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, label := range metric.GetLabel() {
				labels[label.GetName()] = label.GetValue()
			}
			value := metric.GetCounter().GetValue() + metric.GetGauge().GetValue()
			if labels["pod"] != "" && (labels["namespace"] != "demo" || labels["container"] != "scheduler") {
				t.Errorf("%s of pod %s has labels %v, want namespace demo and container scheduler", name, labels["pod"], labels)
			}
			got[name] = append(got[name], sample{Pod: labels["pod"], Value: value, At: metric.GetTimestampMs()})
		}
	}
	ms := at.UnixMilli()
	startedSeconds := float64(started.Unix())
	want := map[string][]sample{
		"node_cpu_usage_seconds_total":       {{Value: 1234.5, At: ms}},
		"node_memory_working_set_bytes":      {{Value: 8 << 30, At: ms}},
		"container_cpu_usage_seconds_total":  {{"packer-scheduler-a", 1.5, ms}, {"packer-scheduler-b", 0.25, ms}},
		"container_memory_working_set_bytes": {{"packer-scheduler-a", 40 << 20, ms}, {"packer-scheduler-b", 30 << 20, ms}},
		"container_start_time_seconds":       {{"packer-scheduler-a", startedSeconds, ms}, {"packer-scheduler-b", startedSeconds, ms}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resource metrics (-want +got):\n%s", diff)
	}
}

// TestProcessUsage measures a real process as a pod's, this test's own (a fresh process
// may show no resident memory yet: the kernel counts it lazily): its CPU time, resident
// memory and start, under its pod's names; a pod between runs is left out.
func TestProcessUsage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "scheduler"}}},
		}
	}
	running := &podProcess{pod: pod("running")}
	started := time.Now().Add(-time.Minute)
	running.current.Store(&processRun{pid: os.Getpid(), started: started})
	r := &runner{pods: map[string]*podProcess{"demo/running": running, "demo/restarting": {pod: pod("restarting")}}}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	// The kernel counts CPU time in ticks: work until this process has used one.
	spent := ownCPUTime(t, fs)
	for deadline := time.Now().Add(10 * time.Second); spent == 0 && time.Now().Before(deadline); spent = ownCPUTime(t, fs) {
		for i := 0; i < 1e6; i++ {
			_ = fmt.Sprint(i)
		}
	}
	if spent == 0 {
		t.Fatal("this process used no CPU tick in 10 s of work")
	}
	usage := r.processUsage(fs)
	if len(usage) != 1 {
		t.Fatalf("measured %d pods, want the one whose process runs: %+v", len(usage), usage)
	}
	got := usage[0]
	if got.namespace != "demo" || got.pod != "running" || got.container != "scheduler" || !got.started.Equal(started) {
		t.Errorf("measured %s/%s container %s started %v, want demo/running container scheduler started %v", got.namespace, got.pod, got.container, got.started, started)
	}
	if got.workingSetBytes == 0 || got.cpuSeconds < spent {
		t.Errorf("measured %d bytes and %g s of CPU, want the process' resident memory and at least the %g s it had used", got.workingSetBytes, got.cpuSeconds, spent)
	}
	node, err := hostUsage(fs)
	if err != nil {
		t.Fatal(err)
	}
	if node.cpuSeconds <= 0 || node.workingSetBytes == 0 {
		t.Errorf("the host's use is %+v, want CPU time and memory in use", node)
	}
}

func ownCPUTime(t *testing.T, fs procfs.FS) float64 {
	stat, err := readProcStat(fs, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return stat.CPUTime()
}
