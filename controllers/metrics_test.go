package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

func TestNextMetricsCheckRenewsTheTokenOnTime(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	renewAt := func(after time.Duration) *v1.SecondarySchedulerStatus {
		return &v1.SecondarySchedulerStatus{Metrics: &v1.MetricsStatus{TokenRenewTime: &metav1.Time{Time: now.Add(after)}}}
	}
	tests := []struct {
		name   string
		status *v1.SecondarySchedulerStatus
		want   time.Duration
	}{
		{"no metrics status: the probe interval", &v1.SecondarySchedulerStatus{}, 5 * time.Minute},
		{"no bound token: the probe interval", &v1.SecondarySchedulerStatus{Metrics: &v1.MetricsStatus{}}, 5 * time.Minute},
		{"renewal after the next probe", renewAt(time.Hour), 5 * time.Minute},
		{"renewal before the next probe, a second after it is due", renewAt(2 * time.Minute), 2*time.Minute + time.Second},
		{"renewal overdue: at once, but not in a busy loop", renewAt(-time.Hour), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextMetricsCheck(tt.status, 5*time.Minute, now); got != tt.want {
				t.Errorf("nextMetricsCheck = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExplainProbeSaysWhatTheOperatorKnows(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer"}}
	withRules := &gathered{access: &metricsAccess{}, recordingRulesPlan: recordingRulesPlan{target: &render.RecordingRuleTarget{Namespace: "monitoring"}}}
	withIdentity := &gathered{access: &metricsAccess{identity: &render.MetricsIdentity{ClusterRole: "cluster-monitoring-view"}}}
	notInstalled := &gathered{access: &metricsAccess{}, recordingRulesPlan: recordingRulesPlan{note: "no ruleSelector"}}
	tests := []struct {
		name       string
		desired    *gathered
		result     metricsprobe.Result
		wantReason v1.ConditionReason
		wantSuffix string
	}{
		{"available stays as it is", withRules, metricsprobe.Result{Available: true, Reason: v1.ReasonMetricsAvailable, Message: "ok"}, v1.ReasonMetricsAvailable, "ok"},
		{"rules asked for but not installable", notInstalled, metricsprobe.Result{Reason: v1.ReasonNodeLabelMismatch, Message: "2 nodes."}, v1.ReasonRecordingRulesNotInstalled, "2 nodes. no ruleSelector"},
		{"rules installed, not evaluated yet", withRules, metricsprobe.Result{Reason: v1.ReasonRecordingRuleMissing, Message: "missing."},
			v1.ReasonRecordingRuleMissing, "installed PrometheusRule monitoring/secondary-scheduler.platform.packer.load-watcher; the series appear once the Prometheus Operator has loaded it into Prometheus and it has been evaluated, usually within a few minutes."},
		{"bound token refused", withIdentity, metricsprobe.Result{Reason: v1.ReasonUnauthorized, Message: "HTTP 403."}, v1.ReasonUnauthorized, "A token that is no longer valid is replaced at the next probe."},
		{"token of the user's refused: nothing to add", notInstalled, metricsprobe.Result{Reason: v1.ReasonUnauthorized, Message: "HTTP 401."}, v1.ReasonUnauthorized, "HTTP 401."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explainProbe(cr, tt.desired, tt.result)
			if got.Reason != tt.wantReason || !strings.HasSuffix(got.Message, tt.wantSuffix) {
				t.Errorf("explainProbe = %s %q, want %s ending in %q", got.Reason, got.Message, tt.wantReason, tt.wantSuffix)
			}
		})
	}
}
