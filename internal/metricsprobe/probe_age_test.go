package metricsprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// fakeSample is one element of a fake answer: the newest sample of a series for
// instance, whose timestamp is value (the API's string), or whose whole value pair is
// raw JSON when raw is set.
type fakeSample struct{ instance, value, raw string }

// fakePrometheus answers the probe's query for each series with samples, evaluated at
// evaluatedAt (the JSON of the evaluation time).
func fakePrometheus(t *testing.T, evaluatedAt string, samples map[string][]fakeSample) *httptest.Server {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query().Get("query")
		var results []string
		for _, series := range Series {
			if !strings.Contains(query, "("+series+")") {
				continue
			}
			for _, sample := range samples[series] {
				instance, _ := json.Marshal(sample.instance)
				value, _ := json.Marshal(sample.value)
				pair := fmt.Sprintf("[%s,%s]", evaluatedAt, value)
				if sample.raw != "" {
					pair = sample.raw
				}
				results = append(results, fmt.Sprintf(`{"metric":{"instance":%s},"value":%s}`, instance, pair))
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(results, ","))
	}))
	t.Cleanup(server.Close)
	return server
}

// The age of the data is Prometheus' measure: its evaluation time minus the newest
// sample's timestamp. Nodes with old data are stale, unless series with other instance
// labels are fresh (labels that changed); values that are no timestamps are no answer.
func TestProbeDataAge(t *testing.T) {
	const evaluatedAt = 1795000000.5 // 2026-11-18T11:06:40.5Z
	evaluated := time.UnixMilli(1795000000500)
	ago := func(age time.Duration) string { return strconv.FormatFloat(evaluatedAt-age.Seconds(), 'f', 3, 64) }
	samplesOf := func(age time.Duration, instances ...string) []fakeSample {
		samples := make([]fakeSample, 0, len(instances))
		for _, instance := range instances {
			samples = append(samples, fakeSample{instance: instance, value: ago(age)})
		}
		return samples
	}
	nodes := []string{"node-a", "node-b", "node-c"}
	fresh := samplesOf(10*time.Second, nodes...)
	withNodeA := func(sample fakeSample) []fakeSample {
		sample.instance = "node-a"
		return append([]fakeSample{sample}, samplesOf(10*time.Second, "node-b", "node-c")...)
	}
	cpu, memory := Series[0], Series[1]

	tests := []struct {
		name   string
		cpu    []fakeSample
		memory []fakeSample
		// evaluatedAt is the JSON of the answers' evaluation time, when not evaluatedAt.
		evaluatedAt     string
		staleAfter      time.Duration
		wantReason      v1.ConditionReason
		wantWithMetrics int
		wantStale       int
		wantAge         time.Duration
		wantNewest      time.Time
		wantMessage     []string
	}{
		{
			name: "fresh everywhere", cpu: fresh, memory: samplesOf(20*time.Second, nodes...),
			wantReason: v1.ReasonMetricsAvailable, wantWithMetrics: 3,
			wantAge: 20 * time.Second, wantNewest: evaluated.Add(-20 * time.Second),
			wantMessage: []string{"serves instance:node_cpu:ratio and instance:node_memory_utilisation:ratio for all 3 nodes"},
		},
		{
			name: "exactly staleAfter old is fresh", cpu: samplesOf(DefaultStaleAfter, nodes...), memory: fresh,
			wantReason: v1.ReasonMetricsAvailable, wantWithMetrics: 3,
			wantAge: DefaultStaleAfter, wantNewest: evaluated.Add(-DefaultStaleAfter),
		},
		{
			name: "stale everywhere, by the default staleAfter", cpu: samplesOf(7*time.Minute+12*time.Second, nodes...), memory: fresh,
			wantReason: v1.ReasonMetricsStale, wantStale: 3,
			wantAge: 7*time.Minute + 12*time.Second, wantNewest: evaluated.Add(-7*time.Minute - 12*time.Second),
			wantMessage: []string{
				"the newest sample of instance:node_cpu:ratio for node node-a in http://127.0.0.1:",
				" is 7m12s old (2026-11-18T10:59:28Z), older than staleAfter 3m0s; 3 of 3 nodes have stale data: ",
				"a recording rule or the scrape of node-exporter stopped",
			},
		},
		{
			name:       "the stalest node and series are named",
			cpu:        append(samplesOf(10*time.Second, "node-a", "node-c"), samplesOf(5*time.Minute, "node-b")...),
			memory:     append(samplesOf(10*time.Second, "node-a", "node-b"), samplesOf(7*time.Minute+12*time.Second, "node-c")...),
			wantReason: v1.ReasonMetricsStale, wantWithMetrics: 1, wantStale: 2,
			wantAge: 7*time.Minute + 12*time.Second, wantNewest: evaluated.Add(-7*time.Minute - 12*time.Second),
			wantMessage: []string{"the newest sample of instance:node_memory_utilisation:ratio for node node-c in ", " is 7m12s old ", "; 2 of 3 nodes have stale data: "},
		},
		{
			name:       "stale nodes and nodes without data",
			cpu:        append(samplesOf(10*time.Second, "node-a"), samplesOf(10*time.Minute, "node-b")...),
			memory:     samplesOf(10*time.Second, "node-a", "node-b"),
			wantReason: v1.ReasonMetricsStale, wantWithMetrics: 1, wantStale: 1,
			wantAge: 10 * time.Minute, wantNewest: evaluated.Add(-10 * time.Minute),
			wantMessage: []string{"for node node-b in ", " is 10m0s old (2026-11-18T10:56:40Z), older than staleAfter 3m0s; 1 of 3 nodes have stale data, 1 no data: "},
		},
		{
			name: "a staleAfter of the user's", cpu: samplesOf(45*time.Second, nodes...), memory: fresh, staleAfter: 30 * time.Second,
			wantReason: v1.ReasonMetricsStale, wantStale: 3,
			wantAge: 45 * time.Second, wantNewest: evaluated.Add(-45 * time.Second),
			wantMessage: []string{" is 45s old (2026-11-18T11:05:55Z), older than staleAfter 30s; 3 of 3 nodes have stale data"},
		},
		{
			name: "ages are rounded up to the second", cpu: samplesOf(30*time.Second+time.Millisecond, nodes...), memory: fresh, staleAfter: 30 * time.Second,
			wantReason: v1.ReasonMetricsStale, wantStale: 3,
			wantAge: 30*time.Second + time.Millisecond, wantNewest: evaluated.Add(-30*time.Second - time.Millisecond),
			wantMessage: []string{" is 31s old (2026-11-18T11:06:10Z), older than staleAfter 30s;"},
		},
		{
			// The labels changed: the series keyed by node names stopped, others took over.
			name:       "stale node names, fresh addresses",
			cpu:        append(samplesOf(6*time.Minute, nodes...), samplesOf(10*time.Second, "10.0.0.31:9100", "10.0.0.32:9100", "10.0.0.33:9100")...),
			memory:     fresh,
			wantReason: v1.ReasonNodeLabelMismatch, wantStale: 3,
			wantAge: 6 * time.Minute, wantNewest: evaluated.Add(-6 * time.Minute),
			wantMessage: []string{
				"3 of 3 nodes have no fresh instance:node_cpu:ratio or instance:node_memory_utilisation:ratio series labelled with their name (for example node-a)",
				`; series carry instance="10.0.0.31:9100", which is no node name: relabel instance to the node name`,
			},
		},
		{
			name: "stale addresses are no sign of relabelling",
			cpu:  append(samplesOf(6*time.Minute, nodes...), samplesOf(6*time.Minute, "10.0.0.31:9100")...), memory: fresh,
			wantReason: v1.ReasonMetricsStale, wantStale: 3,
			wantAge: 6 * time.Minute, wantNewest: evaluated.Add(-6 * time.Minute),
			wantMessage: []string{"the newest sample of instance:node_cpu:ratio for node node-a "},
		},
		{
			name: "a node without series", cpu: samplesOf(10*time.Second, "node-a", "node-b"), memory: samplesOf(10*time.Second, "node-a", "node-b"),
			wantReason: v1.ReasonNodeLabelMismatch, wantWithMetrics: 2,
			wantAge: 10 * time.Second, wantNewest: evaluated.Add(-10 * time.Second),
			wantMessage: []string{"1 of 3 nodes have no instance:node_cpu:ratio or instance:node_memory_utilisation:ratio series labelled with their name (for example node-c)"},
		},
		{
			name: "no node has data", cpu: samplesOf(10*time.Second, "10.0.0.31:9100"), memory: samplesOf(10*time.Second, "10.0.0.31:9100"),
			wantReason:  v1.ReasonNodeLabelMismatch,
			wantMessage: []string{"3 of 3 nodes have no instance:node_cpu:ratio", `instance="10.0.0.31:9100"`},
		},
		{
			name: "a series without any sample in the window", cpu: fresh,
			wantReason:  v1.ReasonRecordingRuleMissing,
			wantMessage: []string{"has no series instance:node_memory_utilisation:ratio"},
		},
		{
			// Prometheus never answers a sample after the evaluation time; a clock may.
			name: "timestamps in the future are fresh", cpu: samplesOf(-time.Minute, nodes...), memory: samplesOf(-time.Hour, nodes...),
			wantReason: v1.ReasonMetricsAvailable, wantWithMetrics: 3,
			wantNewest: evaluated.Add(time.Minute),
		},
		{
			name: "of two samples of an instance, the newer counts",
			cpu:  append(fresh, fakeSample{instance: "node-a", value: ago(10 * time.Minute)}), memory: fresh,
			wantReason: v1.ReasonMetricsAvailable, wantWithMetrics: 3,
			wantAge: 10 * time.Second, wantNewest: evaluated.Add(-10 * time.Second),
		},
		{
			name: "a sample of 1970", cpu: withNodeA(fakeSample{value: "0"}), memory: fresh,
			wantReason: v1.ReasonMetricsStale, wantWithMetrics: 2, wantStale: 1,
			wantAge: 1795000000500 * time.Millisecond, wantNewest: time.UnixMilli(0),
			wantMessage: []string{" is 498611h6m41s old (1970-01-01T00:00:00Z), older than staleAfter 3m0s; 1 of 3 nodes have stale data"},
		},
		{
			name: "an age beyond what a Duration holds", cpu: withNodeA(fakeSample{value: "-8e15"}), memory: fresh,
			wantReason: v1.ReasonMetricsStale, wantWithMetrics: 2, wantStale: 1,
			wantAge: math.MaxInt64, wantNewest: time.UnixMilli(-8e18),
			wantMessage: []string{" is 2562047h47m16s old ("},
		},
		{
			name: "NaN", cpu: withNodeA(fakeSample{value: "NaN"}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response holds values that are no timestamps;"},
		},
		{
			name: "infinity", cpu: fresh, memory: withNodeA(fakeSample{value: "+Inf"}),
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"for instance:node_memory_utilisation:ratio failed: response holds values that are no timestamps;"},
		},
		{
			name: "minus infinity", cpu: withNodeA(fakeSample{value: "-Inf"}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response holds values that are no timestamps;"},
		},
		{
			name: "a value beyond any timestamp", cpu: withNodeA(fakeSample{value: "1e300"}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response holds values that are no timestamps;"},
		},
		{
			name: "an evaluation time beyond any timestamp", cpu: fresh, memory: fresh, evaluatedAt: "1e300",
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response holds values that are no timestamps;"},
		},
		{
			name: "a value that is no number", cpu: withNodeA(fakeSample{value: "0x1p-2 yesterday"}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response is not a Prometheus API response;"},
		},
		{
			name: "an empty value", cpu: withNodeA(fakeSample{value: ""}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response is not a Prometheus API response;"},
		},
		{
			name: "an evaluation time that is no number", cpu: fresh, memory: fresh, evaluatedAt: `"now"`,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response is not a Prometheus API response;"},
		},
		{
			name: "a value that is a number, not a string", cpu: withNodeA(fakeSample{raw: "[1795000000.5,1795000000]"}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response is not a Prometheus API response;"},
		},
		{
			name: "a value without its evaluation time", cpu: withNodeA(fakeSample{raw: `["1795000000"]`}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response is not a Prometheus API response;"},
		},
		{
			name: "a value that is an object", cpu: withNodeA(fakeSample{raw: `{"at":1795000000}`}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response is not a Prometheus API response;"},
		},
		{
			name: "no value", cpu: withNodeA(fakeSample{raw: "null"}), memory: fresh,
			wantReason: v1.ReasonPrometheusUnreachable, wantMessage: []string{"failed: response holds values that are no timestamps;"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evaluatedAtJSON := tt.evaluatedAt
			if evaluatedAtJSON == "" {
				evaluatedAtJSON = strconv.FormatFloat(evaluatedAt, 'f', 3, 64)
			}
			server := fakePrometheus(t, evaluatedAtJSON, map[string][]fakeSample{cpu: tt.cpu, memory: tt.memory})
			client := &http.Client{Timeout: 10 * time.Second}

			result := Probe(context.Background(), client, server.URL, "", nodes, tt.staleAfter)

			if result.Reason != tt.wantReason || result.Available != (tt.wantReason == v1.ReasonMetricsAvailable) {
				t.Errorf("reason %s (available %v), want %s: %s", result.Reason, result.Available, tt.wantReason, result.Message)
			}
			if result.NodesWithMetrics != tt.wantWithMetrics || result.StaleNodes != tt.wantStale || result.Nodes != len(nodes) {
				t.Errorf("%d nodes with metrics and %d stale of %d, want %d and %d of %d",
					result.NodesWithMetrics, result.StaleNodes, result.Nodes, tt.wantWithMetrics, tt.wantStale, len(nodes))
			}
			if result.DataAge != tt.wantAge || !result.NewestSample.Equal(tt.wantNewest) {
				t.Errorf("data age %s of the sample at %s, want %s at %s", result.DataAge, result.NewestSample, tt.wantAge, tt.wantNewest)
			}
			for _, want := range tt.wantMessage {
				if !strings.Contains(result.Message, want) {
					t.Errorf("message %q does not say %q", result.Message, want)
				}
			}
			if i := strings.IndexFunc(result.Message, unicode.IsControl); i >= 0 {
				t.Errorf("message has a control character at %d: %q", i, result.Message)
			}
		})
	}
}

// The probe asks for the newest sample's timestamp, not for the series' value: an
// instant query of the series alone loses the series that stopped.
func TestNewestSampleQuery(t *testing.T) {
	want := "max by (instance) (timestamp(instance:node_cpu:ratio) or max_over_time(timestamp(instance:node_cpu:ratio)[900s:30s]))"
	if got := newestSampleQuery("instance:node_cpu:ratio"); got != want {
		t.Errorf("query\n%s\nwant\n%s", got, want)
	}
}

// Whatever an endpoint sends as a sample's value, reading it never panics, and an age
// is never negative.
func FuzzSampleValue(f *testing.F) {
	for _, seed := range []string{`[1795000000.5,"1795000000"]`, `[1795000000.5,"NaN"]`, `[1e300,"-8e15"]`, `[0,"+Inf"]`, `[-9e15,"9e15"]`, `null`, `[1,2,3]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var value sampleValue
		if json.Unmarshal([]byte(data), &value) != nil || !isTimestamp(value.evaluatedAt) || !isTimestamp(value.value) {
			return
		}
		if sample := newestSampleOf(value); sample.age < 0 {
			t.Errorf("age %s of %s", sample.age, data)
		}
	})
}
