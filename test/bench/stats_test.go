package main

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	fifty := make([]float64, 50)
	for i := range fifty {
		fifty[i] = float64(50 - i) // 50..1, unsorted
	}
	tests := []struct {
		name   string
		values []float64
		p      float64
		want   float64
	}{
		{name: "none", values: nil, p: 50, want: math.NaN()},
		{name: "one", values: []float64{7}, p: 99, want: 7},
		{name: "p50 of 50 is the 25th", values: fifty, p: 50, want: 25},
		{name: "p99 of 50 is the largest", values: fifty, p: 99, want: 50},
		{name: "p100 is the largest", values: fifty, p: 100, want: 50},
		{name: "p1 of 50 is the smallest", values: fifty, p: 1, want: 1},
		{name: "p50 of 4 is the 2nd", values: []float64{40, 10, 30, 20}, p: 50, want: 20},
		{name: "p90 of 10 is the 9th", values: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p: 90, want: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := percentile(tt.values, tt.p)
			if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.values, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileLeavesValuesAlone(t *testing.T) {
	values := []float64{3, 1, 2}
	percentile(values, 50)
	median(values)
	if values[0] != 3 || values[1] != 1 || values[2] != 2 {
		t.Errorf("values reordered: %v", values)
	}
}

func TestMedian(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		want   float64
	}{
		{name: "none", values: nil, want: nan},
		{name: "odd", values: []float64{9, 1, 5}, want: 5},
		{name: "even: mean of the middle two", values: []float64{4, 1, 3, 2}, want: 2.5},
		{name: "a missing run counts as the largest", values: []float64{1, nan, 3}, want: 3},
		{name: "mostly missing is missing", values: []float64{nan, 1, nan}, want: nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := median(tt.values)
			if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("median(%v) = %v, want %v", tt.values, got, tt.want)
			}
		})
	}
}
