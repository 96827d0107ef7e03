package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
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
