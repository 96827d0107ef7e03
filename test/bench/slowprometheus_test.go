package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// newTestProxy serves a delayingProxy of delay in front of backend.
func newTestProxy(t *testing.T, backend http.Handler, delay time.Duration) (*delayingProxy, *httptest.Server) {
	t.Helper()
	upstream := httptest.NewServer(backend)
	t.Cleanup(upstream.Close)
	target, err := url.Parse(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newDelayingProxy(target, delay)
	server := httptest.NewServer(proxy)
	t.Cleanup(server.Close)
	return proxy, server
}

func TestDelayingProxyForwardsOnlyAfterItsDelay(t *testing.T) {
	const delay = 200 * time.Millisecond
	forwardedAt := make(chan time.Time, 1)
	proxy, server := newTestProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwardedAt <- time.Now()
		_, _ = io.WriteString(w, r.URL.Path+"?"+r.URL.RawQuery)
	}), delay)

	sent := time.Now()
	response, err := http.Get(server.URL + "/api/v1/query?query=up")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = response.Body.Close() }()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatal(err)
	}
	if response.StatusCode != http.StatusOK || string(body) != "/api/v1/query?query=up" {
		t.Errorf("answer %s %q, want 200 with the path and query forwarded", response.Status, body)
	}
	if held := (<-forwardedAt).Sub(sent); held < delay {
		t.Errorf("forwarded %v after the request, want at least %v", held, delay)
	}
	if counts := proxy.counts(); counts != (proxyCounts{received: 1, forwarded: 1}) {
		t.Errorf("counts = %+v, want one received and forwarded", counts)
	}
}

func TestDelayingProxyDropsARequestWhoseClientGaveUp(t *testing.T) {
	var backendCalls atomic.Int64
	proxy, server := newTestProxy(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { backendCalls.Add(1) }), time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+"/api/v1/query", nil)
	if err != nil {
		t.Fatal(err)
	}
	if response, err := http.DefaultClient.Do(request); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			_ = response.Body.Close()
		}
		t.Fatalf("err = %v, want the client's deadline: the proxy holds for a minute", err)
	}
	// The proxy sees the connection close a moment after the client gave up.
	deadline := time.Now().Add(5 * time.Second)
	for proxy.counts().abandoned == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if counts := proxy.counts(); counts != (proxyCounts{received: 1, abandoned: 1}) || backendCalls.Load() != 0 {
		t.Errorf("counts = %+v, backend called %d times; want one received and abandoned, nothing forwarded", counts, backendCalls.Load())
	}
}

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

func TestProxyCountsSettleWhenNothingIsHeld(t *testing.T) {
	if (proxyCounts{received: 3, forwarded: 1, abandoned: 1}).settled() {
		t.Error("settled with a request still held")
	}
	if !(proxyCounts{received: 3, forwarded: 1, abandoned: 2}).settled() {
		t.Error("not settled with every request forwarded or abandoned")
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
