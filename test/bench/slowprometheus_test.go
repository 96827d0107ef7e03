package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

func TestHasProbeResultIsTrueOrFalseMetricsAvailable(t *testing.T) {
	withCondition := func(conditions ...metav1.Condition) *v1.SecondaryScheduler {
		return &v1.SecondaryScheduler{Status: v1.SecondarySchedulerStatus{Conditions: conditions}}
	}
	metricsAvailable := func(status metav1.ConditionStatus, reason v1.ConditionReason) metav1.Condition {
		return metav1.Condition{Type: string(v1.ConditionMetricsAvailable), Status: status, Reason: string(reason)}
	}
	for _, tc := range []struct {
		name string
		cr   *v1.SecondaryScheduler
		want bool
	}{
		{"no status yet", withCondition(), false},
		{"only Available", withCondition(metav1.Condition{Type: string(v1.ConditionAvailable), Status: metav1.ConditionTrue}), false},
		{"a probe running", withCondition(metricsAvailable(metav1.ConditionUnknown, v1.ReasonMetricsProbing)), false},
		{"unreachable", withCondition(metricsAvailable(metav1.ConditionFalse, v1.ReasonPrometheusUnreachable)), true},
		{"available", withCondition(metricsAvailable(metav1.ConditionTrue, v1.ReasonMetricsAvailable)), true},
	} {
		if got := hasProbeResult(tc.cr); got != tc.want {
			t.Errorf("%s: hasProbeResult = %t, want %t", tc.name, got, tc.want)
		}
	}
}

func TestSummarizeConditions(t *testing.T) {
	got := summarizeConditions(map[string]int{"False/PrometheusUnreachable": 9, "none": 1}, "querying the proxy failed: timeout after 10s.")
	want := `False/PrometheusUnreachable (9), none (1); for example "querying the proxy failed: timeout after 10s"`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := summarizeConditions(map[string]int{"none": 10}, ""); got != "none (10)" {
		t.Errorf("without a message: got %q", got)
	}
}

func TestBenchTBTurnsFatalIntoAnErrorAndCleansUpInReverse(t *testing.T) {
	tb := &benchTB{dir: t.TempDir()}
	var order []int
	tb.Cleanup(func() { order = append(order, 1) })
	tb.Cleanup(func() { order = append(order, 2) })
	err := func() (err error) {
		defer func() {
			if recovered := recover(); recovered != nil {
				err = recovered.(tbFatal)
			}
		}()
		tb.Fatalf("prometheus did not become ready at %s", "http://127.0.0.1:1")
		return nil
	}()
	if err == nil || err.Error() != "prometheus did not become ready at http://127.0.0.1:1" || !tb.Failed() {
		t.Errorf("err = %v, failed %t; want the message as an error, and failed", err, tb.Failed())
	}
	tb.cleanUp()
	tb.cleanUp()
	if len(order) != 2 || order[0] != 2 || order[1] != 1 {
		t.Errorf("clean-ups ran in order %v, want [2 1], each once", order)
	}
}
