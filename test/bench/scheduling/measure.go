package scheduling

import (
	"math"
	"slices"
	"time"
)

// IdealNodes is the fewest nodes that can hold pods pods of podMilliCPU each, on nodes of
// nodeMilliCPU allocatable CPU and at most podsPerNode pods: the larger of the CPU bound
// and the pod-count bound. 2,000 pods of 100m on nodes of 32 cores and 110 pods need 7
// nodes by CPU but 19 by pod count, so 19.
func IdealNodes(pods, podMilliCPU, nodeMilliCPU, podsPerNode int) int {
	if pods <= 0 {
		return 0
	}
	byCPU := 0
	if podMilliCPU > 0 && nodeMilliCPU > 0 {
		// A node holds only whole pods.
		byCPU = ceilDiv(pods, nodeMilliCPU/podMilliCPU)
	}
	byCount := 0
	if podsPerNode > 0 {
		byCount = ceilDiv(pods, podsPerNode)
	}
	return max(byCPU, byCount)
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return math.MaxInt
	}
	return (a + b - 1) / b
}

// Percentile is the nearest-rank percentile p (0 < p <= 100) of values: the smallest value
// that at least p% of the values are at most. It is 0 for no values.
func Percentile(values []time.Duration, p float64) time.Duration {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(values))
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// median is the middle of values, the mean of the two middle ones for an even count, and 0
// for none.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(values))
	middle := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[middle]
	}
	return (sorted[middle-1] + sorted[middle]) / 2
}

// medianIndex is the index in values of the value whose rank is the median (the lower of
// the two middle ones for an even count), -1 for none: the run to show as typical.
func medianIndex(values []float64) int {
	if len(values) == 0 {
		return -1
	}
	order := make([]int, len(values))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case values[a] < values[b]:
			return -1
		case values[a] > values[b]:
			return 1
		}
		return 0
	})
	return order[(len(order)-1)/2]
}

// CurvePoint is one step of a run's curve: Bound pods were bound Elapsed after the first
// create.
type CurvePoint struct {
	Elapsed time.Duration
	Bound   int
}

// boundCurve turns the bind times of a run (offsets from its first create) into the count
// of bound pods over time, one point per bind, in order.
func boundCurve(bindOffsets []time.Duration) []CurvePoint {
	sorted := slices.Sorted(slices.Values(bindOffsets))
	curve := make([]CurvePoint, 0, len(sorted)+1)
	curve = append(curve, CurvePoint{})
	for i, offset := range sorted {
		curve = append(curve, CurvePoint{Elapsed: offset, Bound: i + 1})
	}
	return curve
}
