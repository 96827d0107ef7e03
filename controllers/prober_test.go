package controllers

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
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

// TestProbesRunOutsideTheReconcile checks that asking for a probe never waits for
// Prometheus: the first ask starts one probe and reports none yet, asks meanwhile start
// no other, and the result, once in, comes back as an event for the resource and answers
// the next ask.
func TestProbesRunOutsideTheReconcile(t *testing.T) {
	release := make(chan struct{})
	var requests atomic.Int32
	prometheus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		<-release
		http.Error(w, "not a Prometheus", http.StatusInternalServerError)
	}))
	defer prometheus.Close()
	prober := &MetricsProber{Timeout: 10 * time.Second, Interval: time.Minute}
	key := types.NamespacedName{Namespace: "platform", Name: "packer"}
	ask := func() bool {
		_, ok := prober.probe(key, prometheus.URL, &gather.MetricsAccess{}, []string{"node-1"}, 3*time.Minute, time.Minute)
		return ok
	}

	// Prometheus holds the request until released: an ask that waited for it would not return.
	if ask() {
		t.Fatal("a result before any probe ran")
	}
	if ask() {
		t.Fatal("a result while the probe still runs")
	}
	close(release)
	select {
	case done := <-prober.channel():
		if got := client.ObjectKeyFromObject(done.Object); got != key {
			t.Fatalf("the probe reported %s, want %s", got, key)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the finished probe reported nothing")
	}
	result, ok := prober.probe(key, prometheus.URL, &gather.MetricsAccess{}, []string{"node-1"}, 3*time.Minute, time.Minute)
	if !ok || result.Available {
		t.Fatalf("after the probe: ok %t, available %t; want its result, not available", ok, result.Available)
	}
	// The metrics probe asks twice at most per probe (the series, then their age); the
	// second ask started none.
	if got := requests.Load(); got < 1 || got > 2 {
		t.Errorf("Prometheus got %d requests, want those of one probe", got)
	}

	// Another node in place of the one probed starts a probe of its own (the last one did
	// not ask about it), while the last result still answers.
	if _, ok := prober.probe(key, prometheus.URL, &gather.MetricsAccess{}, []string{"node-2"}, 3*time.Minute, time.Minute); !ok {
		t.Error("a change of the nodes alone hides the last result")
	}
	select {
	case <-prober.channel():
	case <-time.After(30 * time.Second):
		t.Fatal("a node replaced by another, the count unchanged, started no probe")
	}
	if _, ok := prober.probe(key, prometheus.URL, &gather.MetricsAccess{}, []string{"node-1", "node-2"}, 3*time.Minute, time.Minute); !ok {
		t.Error("a change of the nodes alone hides the last result")
	}
	// Another address does not.
	if _, ok := prober.probe(key, prometheus.URL+"/other", &gather.MetricsAccess{}, []string{"node-1"}, 3*time.Minute, time.Minute); ok {
		t.Error("the result about another address answers")
	}
	prober.forget(key)
}
