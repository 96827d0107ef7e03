package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// serveStatuses answers a probe with each status in turn, then with the last, and counts
// the probes.
func serveStatuses(t *testing.T, statuses ...int) (string, *atomic.Int32) {
	t.Helper()
	var served atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(statuses[min(int(served.Add(1))-1, len(statuses)-1)])
	}))
	t.Cleanup(server.Close)
	return server.URL, &served
}

func TestProbeRun(t *testing.T) {
	serve := func(t *testing.T, statuses ...int) string {
		url, _ := serveStatuses(t, statuses...)
		return url
	}
	started := time.Now()
	// Checks a second apart, as runOnce's ticker makes them.
	at := func(seconds int) time.Time { return started.Add(time.Duration(seconds) * time.Second) }
	tests := []struct {
		name         string
		statuses     []int
		initialDelay time.Duration
		want         []bool // alive at seconds 1, 2, 3, …
	}{
		{name: "healthy", statuses: []int{http.StatusOK}, want: []bool{true, true, true, true}},
		{name: "failureThreshold failures in a row", statuses: []int{http.StatusInternalServerError}, want: []bool{true, true, false}},
		{
			name:     "a success resets the count",
			statuses: []int{http.StatusInternalServerError, http.StatusInternalServerError, http.StatusOK, http.StatusServiceUnavailable},
			want:     []bool{true, true, true, true, true, false},
		},
		{
			name:     "not checked before the initial delay",
			statuses: []int{http.StatusInternalServerError}, initialDelay: 3 * time.Second,
			want: []bool{true, true, true, true, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			liveness := &httpProbe{url: serve(t, tt.statuses...), initialDelay: tt.initialDelay, period: time.Second, failureThreshold: 3}
			probes := newProbeRun(nil, liveness, nil, started)
			var got []bool
			for second := 1; second <= len(tt.want); second++ {
				got = append(got, probes.check(at(second)) == nil)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("alive (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProbeRunReadiness(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer server.Close()
	started := time.Now()
	tests := []struct {
		name      string
		readiness *httpProbe
		at        time.Duration
		want      bool
	}{
		{name: "no probe: ready once running", at: 0, want: true},
		{name: "passing", readiness: &httpProbe{url: server.URL}, at: time.Second, want: true},
		{name: "before the initial delay", readiness: &httpProbe{url: server.URL, initialDelay: 5 * time.Second}, at: 4 * time.Second, want: false},
		{name: "after the initial delay", readiness: &httpProbe{url: server.URL, initialDelay: 5 * time.Second}, at: 5 * time.Second, want: true},
		{name: "not answering", readiness: &httpProbe{url: "http://127.0.0.1:1/readyz"}, at: time.Second, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newProbeRun(tt.readiness, nil, nil, started).ready(started.Add(tt.at)); got != tt.want {
				t.Errorf("ready = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestProbeRunStartup(t *testing.T) {
	started := time.Now()
	at := func(seconds int) time.Time { return started.Add(time.Duration(seconds) * time.Second) }
	failing, okay := http.StatusServiceUnavailable, http.StatusOK

	t.Run("holds the others until it passes", func(t *testing.T) {
		startupURL, _ := serveStatuses(t, failing, failing, failing, failing, okay)
		livenessURL, livenessProbes := serveStatuses(t, okay)
		readinessURL, _ := serveStatuses(t, okay)
		probes := newProbeRun(&httpProbe{url: readinessURL}, &httpProbe{url: livenessURL, period: time.Second, failureThreshold: 3},
			&httpProbe{url: startupURL, period: time.Second, failureThreshold: 10}, started)
		for second := 1; second <= 4; second++ {
			if err := probes.check(at(second)); err != nil {
				t.Fatalf("second %d: %v, want the startup probe's failures below its threshold", second, err)
			}
			if probes.ready(at(second)) {
				t.Errorf("second %d: ready before the startup probe passed", second)
			}
		}
		if livenessProbes.Load() != 0 {
			t.Errorf("liveness probed %d times before the startup probe passed", livenessProbes.Load())
		}
		if err := probes.check(at(5)); err != nil || !probes.ready(at(5)) {
			t.Errorf("once the startup probe passed: check %v, ready %t; want alive and ready", err, probes.ready(at(5)))
		}
		if livenessProbes.Load() != 1 {
			t.Errorf("liveness probed %d times once the startup probe passed, want once", livenessProbes.Load())
		}
	})

	t.Run("failureThreshold failures in a row restart", func(t *testing.T) {
		startupURL, _ := serveStatuses(t, failing)
		probes := newProbeRun(nil, nil, &httpProbe{url: startupURL, period: time.Second, failureThreshold: 3}, started)
		var err error
		for second := 1; second <= 3 && err == nil; second++ {
			err = probes.check(at(second))
			if second < 3 && err != nil {
				t.Fatalf("second %d: %v, want a restart only at the third failure", second, err)
			}
		}
		if err == nil || !strings.Contains(err.Error(), "startup probe") {
			t.Errorf("after 3 failures: %v, want the startup probe's failure", err)
		}
	})
}
