package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestProbeRun(t *testing.T) {
	// The process answers its probes with each status in turn, then with the last.
	serve := func(t *testing.T, statuses ...int) string {
		var served atomic.Int32
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(statuses[min(int(served.Add(1))-1, len(statuses)-1)])
		}))
		t.Cleanup(server.Close)
		return server.URL
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
			probes := newProbeRun(nil, liveness, started)
			var got []bool
			for second := 1; second <= len(tt.want); second++ {
				got = append(got, probes.alive(at(second)))
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
			if got := newProbeRun(tt.readiness, nil, started).ready(started.Add(tt.at)); got != tt.want {
				t.Errorf("ready = %t, want %t", got, tt.want)
			}
		})
	}
}
