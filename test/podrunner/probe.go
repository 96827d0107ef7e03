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

// probeRun follows the probes of one run of the process, as the kubelet does: until the
// startup probe has passed, neither the liveness nor the readiness probe runs, and the
// container is not ready.
type probeRun struct {
	readiness, liveness, startup *httpProbe
	started                      time.Time
	// startedUp is whether the startup probe has passed; true without one.
	startedUp                         bool
	nextStartup, nextLiveness         time.Time
	startupFailures, livenessFailures int32
}

func newProbeRun(readiness, liveness, startup *httpProbe, started time.Time) *probeRun {
	run := &probeRun{readiness: readiness, liveness: liveness, startup: startup, started: started, startedUp: startup == nil}
	if startup != nil {
		run.nextStartup = started.Add(startup.initialDelay)
	}
	if liveness != nil {
		run.nextLiveness = started.Add(liveness.initialDelay)
	}
	return run
}

// ready is whether the readiness probe passes; before its initial delay, or before the
// startup probe has passed, it does not.
func (r *probeRun) ready(now time.Time) bool {
	if !r.startedUp {
		return false
	}
	if r.readiness == nil {
		return true
	}
	return now.Sub(r.started) >= r.readiness.initialDelay && r.readiness.passes()
}

// check runs the startup probe until it passes, then the liveness probe, each every
// period after its initial delay, and returns the error that restarts the container once
// one has failed failureThreshold times in a row, nil until then.
func (r *probeRun) check(now time.Time) error {
	if !r.startedUp {
		if now.Before(r.nextStartup) {
			return nil
		}
		r.nextStartup = now.Add(r.startup.period)
		if !r.startup.passes() {
			r.startupFailures++
			return r.startup.failedAfter(r.startupFailures, "startup")
		}
		r.startedUp = true
		// The liveness probe's initial delay counts from the container's start.
		r.nextLiveness = maxTime(r.nextLiveness, now)
	}
	if r.liveness == nil || now.Before(r.nextLiveness) {
		return nil
	}
	r.nextLiveness = now.Add(r.liveness.period)
	if r.liveness.passes() {
		r.livenessFailures = 0
		return nil
	}
	r.livenessFailures++
	return r.liveness.failedAfter(r.livenessFailures, "liveness")
}

// failedAfter is the error of a probe of kind that failed failures times in a row, nil
// while that is fewer than its failureThreshold.
func (p *httpProbe) failedAfter(failures int32, kind string) error {
	if failures < p.failureThreshold {
		return nil
	}
	return fmt.Errorf("%s probe %s failed %d times in a row", kind, p.url, failures)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
