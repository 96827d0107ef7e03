package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// probeClient reaches probes as a kubelet does: without verifying the serving certificate,
// and on a new connection each time, so that none outlives a process that was restarted.
var probeClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{
	DisableKeepAlives: true,
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as kubelet probes
}}

// httpProbe is one of the container's httpGet probes, aimed at the process's host port.
type httpProbe struct {
	url              string
	initialDelay     time.Duration
	period           time.Duration
	failureThreshold int32
}

// newHTTPProbe aims probe at the host port of its container port. podrunner runs httpGet
// probes only; without one there is nothing to check, and the process counts as passing.
func newHTTPProbe(container corev1.Container, probe *corev1.Probe, ports hostPorts) (*httpProbe, error) {
	if probe == nil || probe.HTTPGet == nil {
		return nil, nil
	}
	port, err := probePort(container, probe.HTTPGet.Port)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(probe.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	// The API server defaults these; a pod built in a test may leave them unset.
	period, failureThreshold := probe.PeriodSeconds, probe.FailureThreshold
	if period == 0 {
		period = 10
	}
	if failureThreshold == 0 {
		failureThreshold = 3
	}
	return &httpProbe{
		url:              fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, ports[port], probe.HTTPGet.Path),
		initialDelay:     time.Duration(probe.InitialDelaySeconds) * time.Second,
		period:           time.Duration(period) * time.Second,
		failureThreshold: failureThreshold,
	}, nil
}

func (p *httpProbe) passes() bool {
	response, err := probeClient.Get(p.url)
	if err != nil {
		return false
	}
	_ = response.Body.Close()
	return response.StatusCode >= 200 && response.StatusCode < 400
}

// probeRun follows the probes of one run of the process.
type probeRun struct {
	readiness, liveness *httpProbe
	started             time.Time
	nextLiveness        time.Time
	livenessFailures    int32
}

func newProbeRun(readiness, liveness *httpProbe, started time.Time) *probeRun {
	run := &probeRun{readiness: readiness, liveness: liveness, started: started}
	if liveness != nil {
		run.nextLiveness = started.Add(liveness.initialDelay)
	}
	return run
}

// ready is whether the readiness probe passes; before its initial delay it does not.
func (r *probeRun) ready(now time.Time) bool {
	if r.readiness == nil {
		return true
	}
	return now.Sub(r.started) >= r.readiness.initialDelay && r.readiness.passes()
}

// alive turns false once the liveness probe, checked every period after its initial delay,
// has failed failureThreshold times in a row.
func (r *probeRun) alive(now time.Time) bool {
	if r.liveness == nil || now.Before(r.nextLiveness) {
		return true
	}
	r.nextLiveness = now.Add(r.liveness.period)
	if r.liveness.passes() {
		r.livenessFailures = 0
		return true
	}
	r.livenessFailures++
	return r.livenessFailures < r.liveness.failureThreshold
}
