package main

import (
	"math"
	"slices"
	"time"
)

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of values: the smallest
// value that at least p% of the values do not exceed. With 50 values, p99 is the largest.
// NaN for no values.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// median is the middle of values, the mean of the two middle ones for an even count, NaN
// for none. NaN values (runs that did not reach the figure) count as larger than any
// other, so that a median of mostly missing runs is missing too.
func median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(values)
	slices.SortFunc(sorted, func(a, b float64) int {
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
			return 0
		case math.IsNaN(a):
			return 1
		case math.IsNaN(b):
			return -1
		}
		return compareFloat(a, b)
	})
	middle := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[middle]
	}
	return (sorted[middle-1] + sorted[middle]) / 2
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// milliseconds turns durations into the milliseconds a row reports.
func milliseconds(durations []time.Duration) []float64 {
	values := make([]float64, len(durations))
	for i, d := range durations {
		values[i] = float64(d) / float64(time.Millisecond)
	}
	return values
}
