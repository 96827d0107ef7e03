package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/klog/v2"
)

// resourceMetricsPattern is the kubelet's resource metrics endpoint, which metrics-server
// scrapes for kubectl top.
const resourceMetricsPattern = "GET /metrics/resource"

// containerUsage is what one pod's process has used, as a kubelet reports a container's.
type containerUsage struct {
	namespace, pod, container string
	// cpuSeconds is the CPU time the process has used since it started, user and system.
	cpuSeconds float64
	// workingSetBytes is its resident memory.
	workingSetBytes uint64
	started         time.Time
}

// nodeUsage is what the host has used, which every podrunner node is.
type nodeUsage struct {
	cpuSeconds      float64
	workingSetBytes uint64
}

// resourceMetrics answers GET /metrics/resource as a kubelet does, with what this machine
// measures: each pod's running process (CPU time and resident memory from /proc), and the
// host's use as the node's. podrunner's nodes share this endpoint and this machine, so
// each reports the same: the host's use and all pods' processes, which metrics-server
// stores once per pod.
func (r *runner) resourceMetrics(w http.ResponseWriter, _ *http.Request) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	node, err := hostUsage(fs)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	writeResourceMetrics(w, node, r.processUsage(fs), time.Now())
}

// hostUsage is the host's CPU time spent other than idle or waiting for I/O, and its
// memory in use (total less available), as a kubelet reports a node's.
func hostUsage(fs procfs.FS) (nodeUsage, error) {
	stat, err := fs.Stat()
	if err != nil {
		return nodeUsage{}, fmt.Errorf("read the host's CPU time: %w", err)
	}
	meminfo, err := fs.Meminfo()
	if err != nil {
		return nodeUsage{}, fmt.Errorf("read the host's memory: %w", err)
	}
	if meminfo.MemTotalBytes == nil || meminfo.MemAvailableBytes == nil {
		return nodeUsage{}, fmt.Errorf("the host's /proc/meminfo has no MemTotal or MemAvailable")
	}
	cpu := stat.CPUTotal
	return nodeUsage{
		cpuSeconds:      cpu.User + cpu.Nice + cpu.System + cpu.IRQ + cpu.SoftIRQ + cpu.Steal,
		workingSetBytes: *meminfo.MemTotalBytes - *meminfo.MemAvailableBytes,
	}, nil
}

// processUsage is the use of every pod's running process, by pod. A process that exits
// while it is read is left out, as a kubelet leaves out a container that has stopped.
func (r *runner) processUsage(fs procfs.FS) []containerUsage {
	r.mu.Lock()
	processes := make([]*podProcess, 0, len(r.pods))
	for _, process := range r.pods {
		processes = append(processes, process)
	}
	r.mu.Unlock()
	var usage []containerUsage
	for _, process := range processes {
		run := process.current.Load()
		if run == nil {
			continue
		}
		stat, err := readProcStat(fs, run.pid)
		if err != nil {
			klog.V(1).InfoS("read a pod's process", "pod", klog.KObj(process.pod), "pid", run.pid, "err", err)
			continue
		}
		usage = append(usage, containerUsage{
			namespace: process.pod.Namespace, pod: process.pod.Name, container: process.pod.Spec.Containers[0].Name,
			cpuSeconds: stat.CPUTime(), workingSetBytes: uint64(stat.ResidentMemory()), started: run.started,
		})
	}
	return usage
}

func readProcStat(fs procfs.FS, pid int) (procfs.ProcStat, error) {
	proc, err := fs.Proc(pid)
	if err != nil {
		return procfs.ProcStat{}, err
	}
	return proc.Stat()
}

// writeResourceMetrics writes the kubelet's resource metrics, in the Prometheus text format
// with the time of measuring on each sample, ordered by namespace and pod.
func writeResourceMetrics(w io.Writer, node nodeUsage, containers []containerUsage, at time.Time) {
	containers = slices.Clone(containers)
	slices.SortFunc(containers, func(a, b containerUsage) int {
		return strings.Compare(a.namespace+"/"+a.pod, b.namespace+"/"+b.pod)
	})
	ms := at.UnixMilli()
	family := func(name, kind, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	}
	family("node_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the node in core-seconds")
	fmt.Fprintf(w, "node_cpu_usage_seconds_total %g %d\n", node.cpuSeconds, ms)
	family("node_memory_working_set_bytes", "gauge", "Current working set of the node in bytes")
	fmt.Fprintf(w, "node_memory_working_set_bytes %d %d\n", node.workingSetBytes, ms)
	labels := func(c containerUsage) string {
		return fmt.Sprintf("{container=%q,namespace=%q,pod=%q}", c.container, c.namespace, c.pod)
	}
	family("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the container in core-seconds")
	for _, c := range containers {
		fmt.Fprintf(w, "container_cpu_usage_seconds_total%s %g %d\n", labels(c), c.cpuSeconds, ms)
	}
	family("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes")
	for _, c := range containers {
		fmt.Fprintf(w, "container_memory_working_set_bytes%s %d %d\n", labels(c), c.workingSetBytes, ms)
	}
	family("container_start_time_seconds", "gauge", "Start time of the container since unix epoch in seconds")
	for _, c := range containers {
		fmt.Fprintf(w, "container_start_time_seconds%s %g %d\n", labels(c), float64(c.started.UnixNano())/1e9, ms)
	}
}
