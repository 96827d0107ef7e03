package promtest

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
)

// newTestProxy serves a DelayingProxy of delay in front of backend.
func newTestProxy(t *testing.T, backend http.Handler, delay time.Duration) (*DelayingProxy, *httptest.Server) {
	t.Helper()
	upstream := httptest.NewServer(backend)
	t.Cleanup(upstream.Close)
	target, err := url.Parse(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := NewDelayingProxy(target, delay)
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
	if counts := proxy.Counts(); counts != (ProxyCounts{Received: 1, Forwarded: 1}) {
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
	for proxy.Counts().Abandoned == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if counts := proxy.Counts(); counts != (ProxyCounts{Received: 1, Abandoned: 1}) || backendCalls.Load() != 0 {
		t.Errorf("counts = %+v, backend called %d times; want one received and abandoned, nothing forwarded", counts, backendCalls.Load())
	}
}

func TestProxyCountsSettleWhenNothingIsHeld(t *testing.T) {
	if (ProxyCounts{Received: 3, Forwarded: 1, Abandoned: 1}).Settled() {
		t.Error("settled with a request still held")
	}
	if !(ProxyCounts{Received: 3, Forwarded: 1, Abandoned: 2}).Settled() {
		t.Error("not settled with every request forwarded or abandoned")
	}
}
