package outcome

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Sample is every node's CPU utilisation of one arm at one moment, and how many pods
// each runs.
type Sample struct {
	Elapsed time.Duration
	CPU     map[string]float64
	Pods    map[string]int
}

// Record is what one arm's run observed.
type Record struct {
	// Samples are taken at a fixed interval from the run's start.
	Samples []Sample
	// Created is when each pod's create request started, Bound when the watch event
	// showing its node arrived, both after the run's start; Node is the node it was bound
	// to. A pod never bound has no Bound.
	Created, Bound map[string]time.Duration
	Node           map[string]string
	// Evicted are the evictions of each pod of the workload (its ReplicaSet's pods, one
	// after another), in the order seen.
	Evicted map[string][]Eviction
	// evictedObjects are the pod objects whose eviction is counted.
	evictedObjects map[string]bool
}

// Eviction is one pod evicted through the Eviction API: when, after the run's start, and
// from which node.
type Eviction struct {
	At   time.Duration
	Node string
}

// NewRecord is an empty record.
func NewRecord() *Record {
	return &Record{Created: map[string]time.Duration{}, Bound: map[string]time.Duration{}, Node: map[string]string{},
		Evicted: map[string][]Eviction{}, evictedObjects: map[string]bool{}}
}

// Summary is an arm's outcome.
type Summary struct {
	// NodesUsed is how many nodes run a pod at the end; PeakNodesUsed the most at any
	// sample.
	NodesUsed, PeakNodesUsed int
	// MeanUtilisation, P95Utilisation and MaxUtilisation are over the nodes used at the
	// end, each node's CPU utilisation averaged over the final window (so that a burst at
	// the last sample does not decide them).
	MeanUtilisation, P95Utilisation, MaxUtilisation float64
	// NodeMinutesAbove is the time nodes spent above the risk threshold, summed over
	// nodes, in minutes; NodesEverAbove how many nodes were above it at some sample.
	NodeMinutesAbove float64
	NodesEverAbove   int
	// Unplaced is how many pods were never bound while they existed.
	Unplaced int
	// LatencyP50 and LatencyP99 are from each pod's create to its bind.
	LatencyP50, LatencyP99 time.Duration
	// Final is each node's CPU utilisation averaged over the final window, highest first,
	// empty nodes included.
	Final []float64
}

// Summarise computes an arm's outcome from its record: threshold is the utilisation
// counted as risk, finalWindow how long before the last sample the final utilisation is
// averaged over, interval the time between samples.
func Summarise(record *Record, workload []Pod, threshold float64, finalWindow, interval time.Duration) Summary {
	var summary Summary
	if len(record.Samples) == 0 {
		return summary
	}
	last := record.Samples[len(record.Samples)-1]
	everAbove := map[string]bool{}
	finalSum, finalCount := map[string]float64{}, 0
	for _, sample := range record.Samples {
		used := 0
		for node, cpu := range sample.CPU {
			if sample.Pods[node] > 0 {
				used++
			}
			if cpu > threshold {
				summary.NodeMinutesAbove += interval.Minutes()
				everAbove[node] = true
			}
		}
		summary.PeakNodesUsed = max(summary.PeakNodesUsed, used)
		if last.Elapsed-sample.Elapsed < finalWindow {
			finalCount++
			for node, cpu := range sample.CPU {
				finalSum[node] += cpu
			}
		}
	}
	summary.NodesEverAbove = len(everAbove)
	var used []float64
	for node, sum := range finalSum {
		average := sum / float64(finalCount)
		summary.Final = append(summary.Final, average)
		if last.Pods[node] > 0 {
			summary.NodesUsed++
			used = append(used, average)
		}
	}
	slices.SortFunc(summary.Final, func(a, b float64) int { return cmp.Compare(b, a) })
	if len(used) > 0 {
		summary.MeanUtilisation = mean(used)
		summary.P95Utilisation = nearestRank(used, 0.95)
		summary.MaxUtilisation = slices.Max(used)
	}
	var latencies []float64
	for _, pod := range workload {
		bound, ok := record.Bound[pod.Name]
		if !ok {
			if _, created := record.Created[pod.Name]; created {
				summary.Unplaced++
			}
			continue
		}
		latencies = append(latencies, float64(bound-record.Created[pod.Name]))
	}
	if len(latencies) > 0 {
		summary.LatencyP50 = time.Duration(nearestRank(latencies, 0.50))
		summary.LatencyP99 = time.Duration(nearestRank(latencies, 0.99))
	}
	return summary
}

// IdealNodes is the fewest nodes of size that hold the real CPU load of the pods present
// at elapsed with none above target: the sum of their mean use over target times a node's
// CPU, rounded up. It is a bound no placement can beat (pods are not divisible, so the
// true optimum may be a node more), and it ignores requests, which may not fit on so few
// nodes: requestBound says how many the requests need.
func IdealNodes(workload []Pod, elapsed time.Duration, size NodeSize, target float64) int {
	total := 0.0
	for _, pod := range workload {
		if pod.PresentAt(elapsed) {
			total += pod.At(elapsed).MeanCPUMillis()
		}
	}
	return int(math.Ceil(total / (target * float64(size.CPUMillis))))
}

// RequestBound is the fewest nodes of size whose allocatable CPU and memory hold the
// requests of the pods present at elapsed: what a scheduler that honours requests (every
// one here: NodeResourcesFit filters by them) needs at least.
func RequestBound(workload []Pod, elapsed time.Duration, size NodeSize) int {
	var cpu, memory int64
	pods := 0
	for _, pod := range workload {
		if pod.PresentAt(elapsed) {
			cpu, memory, pods = cpu+pod.CPURequestMillis, memory+pod.MemoryRequestBytes, pods+1
		}
	}
	return max(ceilDiv(cpu, size.CPUMillis), ceilDiv(memory, size.MemoryBytes), ceilDiv(int64(pods), int64(size.Pods)))
}

// RealLoad is the mean CPU the pods present at elapsed use, in cores, and what they
// request.
func RealLoad(workload []Pod, elapsed time.Duration) (useCores, requestCores float64) {
	for _, pod := range workload {
		if pod.PresentAt(elapsed) {
			useCores += pod.At(elapsed).MeanCPUMillis() / 1000
			requestCores += float64(pod.CPURequestMillis) / 1000
		}
	}
	return useCores, requestCores
}

func ceilDiv(a, b int64) int {
	if b <= 0 {
		return 0
	}
	return int((a + b - 1) / b)
}

func mean(values []float64) float64 {
	sum := 0.0
	for _, value := range values {
		sum += value
	}
	return sum / float64(len(values))
}

// nearestRank is the p-th percentile of values by the nearest-rank method, as the other
// benchmarks report them.
func nearestRank(values []float64, p float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
