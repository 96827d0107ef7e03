package metricsprobe

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// The probe runs against a real Prometheus scraping series the test controls; each
// failure reason is produced for real, then healed.
func TestProbeAgainstRealPrometheus(t *testing.T) {
	prometheus := promtest.Start(t)
	nodes := []string{"node-a", "node-b"}
	client := &http.Client{Timeout: 5 * time.Second}
	probe := func(address, token string) Result {
		return Probe(context.Background(), client, address, token, nodes)
	}
	eventually := func(want v1.ConditionReason, address, token string) Result {
		t.Helper()
		var result Result
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			if result = probe(address, token); result.Reason == want {
				return result
			}
		}
		t.Fatalf("want reason %s, last got %s: %s", want, result.Reason, result.Message)
		return result
	}

	missing := eventually(v1.ReasonRecordingRuleMissing, prometheus.URL, "")
	if !strings.Contains(missing.Message, "instance:node_cpu:ratio") {
		t.Errorf("message should name the missing series: %s", missing.Message)
	}

	prometheus.SetSeries("instance:node_cpu:ratio", map[string]float64{"node-a": 0.3, "node-b": 0.5})
	prometheus.SetSeries("instance:node_memory_utilisation:ratio", map[string]float64{"node-a": 0.2, "node-b": 0.4})
	ok := eventually(v1.ReasonMetricsAvailable, prometheus.URL, "")
	if !ok.Available || ok.NodesWithMetrics != 2 || ok.Nodes != 2 {
		t.Errorf("want all nodes covered: %+v", ok)
	}

	// node-exporter's default instance label is its address, not the node name.
	prometheus.SetSeries("instance:node_cpu:ratio", map[string]float64{"10.0.0.31:9100": 0.3, "node-b": 0.5})
	mismatch := eventually(v1.ReasonNodeLabelMismatch, prometheus.URL, "")
	if mismatch.NodesWithMetrics != 1 || !strings.Contains(mismatch.Message, `instance="10.0.0.31:9100"`) || !strings.Contains(mismatch.Message, "node-a") {
		t.Errorf("mismatch should count nodes and show an example: %+v", mismatch)
	}
	prometheus.SetSeries("instance:node_cpu:ratio", map[string]float64{"node-a": 0.3, "node-b": 0.5})
	eventually(v1.ReasonMetricsAvailable, prometheus.URL, "")

	// In front of it, a proxy that wants a bearer token, as kube-rbac-proxy does.
	guarded := prometheus.TokenProxy("right-token")
	unauthorized := eventually(v1.ReasonUnauthorized, guarded.URL, "wrong-token")
	if strings.Contains(unauthorized.Message, "wrong-token") {
		t.Errorf("a token must never appear in a message: %s", unauthorized.Message)
	}
	eventually(v1.ReasonMetricsAvailable, guarded.URL, "right-token")

	prometheus.Stop()
	unreachable := eventually(v1.ReasonPrometheusUnreachable, prometheus.URL, "")
	if !strings.Contains(unreachable.Message, prometheus.URL) {
		t.Errorf("message should name the address: %s", unreachable.Message)
	}
}
