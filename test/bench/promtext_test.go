package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const scraped = `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 120
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3
rest_client_requests_total{code="404",host="127.0.0.1:6443",method="DELETE"} 7
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="DELETE"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 40
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="secondaryscheduler",result="success"} 55
controller_runtime_reconcile_total{controller="secondaryscheduler",result="requeue_after"} 5
controller_runtime_reconcile_total{controller="other",result="success"} 1000
process_cpu_seconds_total 12.5
go_memstats_heap_inuse_bytes 2.4576e+07
odd_labels{path="a \"quoted\" \\ value\nnext",empty=""} 1 1712345678000
`

func TestParseMetrics(t *testing.T) {
	snapshot, err := parseMetrics(scraped)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		got   float64
		value float64
	}{
		{"all requests", snapshot.sum("rest_client_requests_total", nil), 172},
		{"DELETE", snapshot.sum("rest_client_requests_total", map[string]string{"method": "DELETE"}), 9},
		{"DELETE 404", snapshot.sum("rest_client_requests_total", map[string]string{"method": "DELETE", "code": "404"}), 7},
		{"one controller's reconciles", snapshot.sum("controller_runtime_reconcile_total", map[string]string{"controller": "secondaryscheduler"}), 60},
		{"no labels", snapshot.sum("process_cpu_seconds_total", nil), 12.5},
		{"exponent", snapshot.sum("go_memstats_heap_inuse_bytes", nil), 24576000},
		{"escapes and a timestamp", snapshot.sum("odd_labels", map[string]string{"path": "a \"quoted\" \\ value\nnext", "empty": ""}), 1},
		{"absent", snapshot.sum("absent_total", nil), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.value {
				t.Errorf("got %v, want %v", tt.got, tt.value)
			}
		})
	}
	byMethodCode := snapshot.by("rest_client_requests_total", nil, "method", "code")
	want := map[string]float64{"GET 200": 120, "POST 201": 3, "DELETE 404": 7, "DELETE 200": 2, "PATCH 200": 40}
	if diff := cmp.Diff(want, byMethodCode); diff != "" {
		t.Errorf("by method and code (-want +got):\n%s", diff)
	}
}

func TestParseMetricsRefusesMalformedLines(t *testing.T) {
	for _, line := range []string{
		`no_value`,
		`unterminated{a="b} 1`,
		`unquoted{a=b} 1`,
		`not_a_number{a="b"} one`,
		`too_many 1 2 3`,
	} {
		t.Run(line, func(t *testing.T) {
			if _, err := parseMetrics(line + "\n"); err == nil {
				t.Errorf("parseMetrics(%q) succeeded", line)
			}
		})
	}
}

func TestCounterDelta(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]float64
		want          map[string]float64
	}{
		{name: "unchanged groups left out", before: map[string]float64{"GET 200": 5}, after: map[string]float64{"GET 200": 5}, want: map[string]float64{}},
		{name: "growth", before: map[string]float64{"GET 200": 5}, after: map[string]float64{"GET 200": 8, "PATCH 200": 2}, want: map[string]float64{"GET 200": 3, "PATCH 200": 2}},
		{name: "a restarted process counts from zero", before: map[string]float64{"GET 200": 50}, after: map[string]float64{"GET 200": 4}, want: map[string]float64{"GET 200": 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, counterDelta(tt.before, tt.after)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
