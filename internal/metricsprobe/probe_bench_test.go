package metricsprobe

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// BenchmarkProbe500Nodes measures one probe of a 500-node cluster against a real
// Prometheus: the cost the operator pays per load-aware scheduler and probe interval,
// the 15-minute subquery that finds stale series included.
func BenchmarkProbe500Nodes(b *testing.B) {
	prometheus := promtest.Start(b)
	nodes := make([]string, 500)
	load := map[string]float64{}
	for i := range nodes {
		nodes[i] = fmt.Sprintf("worker-%03d", i)
		load[nodes[i]] = 0.4
	}
	for _, series := range Series {
		prometheus.SetSeries(series, load)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		result := Probe(context.Background(), client, prometheus.URL, "", nodes, 0)
		if result.Reason == v1.ReasonMetricsAvailable {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("Prometheus did not serve the series of 500 nodes: %s", result.Message)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if result := Probe(context.Background(), client, prometheus.URL, "", nodes, 0); !result.Available {
			b.Fatalf("probe failed: %s", result.Message)
		}
	}
}
