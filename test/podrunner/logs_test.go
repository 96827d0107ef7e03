package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// twoRuns is a pod's log after its process ran twice.
const twoRuns = "==== 2026-11-26T10:00:00Z podrunner starts: /bin/manager --leader-elect\n" +
	"first run 1\nfirst run 2\nexit: config refused\n" +
	"==== 2026-11-26T10:00:05Z podrunner starts: /bin/manager --leader-elect\n" +
	"second run 1\nsecond run 2\nsecond run 3\n"

func TestRunOutput(t *testing.T) {
	tests := []struct {
		name, log string
		previous  bool
		want      string
		wantErr   bool
	}{
		{name: "the current run", log: twoRuns, want: "second run 1\nsecond run 2\nsecond run 3\n"},
		{name: "the previous run", log: twoRuns, previous: true, want: "first run 1\nfirst run 2\nexit: config refused\n"},
		{name: "no previous run", log: "==== T podrunner starts: x\nonly\n", previous: true, wantErr: true},
		{name: "a run that wrote nothing yet", log: twoRuns + "==== 2026-11-26T10:00:09Z podrunner starts: /bin/manager\n", want: ""},
		{name: "a line like a start line is output", log: "==== T podrunner starts: x\n==== not a start\n", want: "==== not a start\n"},
		{name: "nothing yet", log: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := runOutput([]byte(tt.log), tt.previous)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("output %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		name, output string
		n            int
		want         string
	}{
		{name: "all", output: "a\nb\nc\n", n: -1, want: "a\nb\nc\n"},
		{name: "the last two", output: "a\nb\nc\n", n: 2, want: "b\nc\n"},
		{name: "more than there are", output: "a\nb\n", n: 5, want: "a\nb\n"},
		{name: "none", output: "a\nb\n", n: 0, want: ""},
		{name: "an unfinished last line counts", output: "a\nb\nc", n: 2, want: "b\nc"},
		{name: "empty", output: "", n: 3, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(lastLines([]byte(tt.output), tt.n)); got != tt.want {
				t.Errorf("lastLines(%q, %d) = %q, want %q", tt.output, tt.n, got, tt.want)
			}
		})
	}
}

func TestContainerLogs(t *testing.T) {
	dir := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "load-packer-scheduler-abc"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-scheduler"}}}}
	process := &podProcess{pod: pod, dir: dir, done: make(chan struct{})}
	if err := os.WriteFile(process.logPath(), []byte(twoRuns), 0o644); err != nil {
		t.Fatal(err)
	}
	server := serveContainerLogs(t, map[string]*podProcess{"platform/load-packer-scheduler-abc": process})

	tests := []struct {
		name, path string
		query      url.Values
		wantStatus int
		want       string
	}{
		{name: "the current run", path: "platform/load-packer-scheduler-abc/kube-scheduler", wantStatus: http.StatusOK,
			want: "second run 1\nsecond run 2\nsecond run 3\n"},
		{name: "--tail=1", path: "platform/load-packer-scheduler-abc/kube-scheduler", query: url.Values{"tailLines": {"1"}},
			wantStatus: http.StatusOK, want: "second run 3\n"},
		{name: "--previous --limit-bytes=5", path: "platform/load-packer-scheduler-abc/kube-scheduler",
			query: url.Values{"previous": {"true"}, "limitBytes": {"5"}}, wantStatus: http.StatusOK, want: "first"},
		{name: "--timestamps is refused", path: "platform/load-packer-scheduler-abc/kube-scheduler", query: url.Values{"timestamps": {"true"}},
			wantStatus: http.StatusBadRequest},
		{name: "another container", path: "platform/load-packer-scheduler-abc/sidecar", wantStatus: http.StatusBadRequest},
		{name: "another pod", path: "platform/other/kube-scheduler", wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			response, err := http.Get(server.URL + "/containerLogs/" + tt.path + "?" + tt.query.Encode())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = response.Body.Close() }()
			body, err := io.ReadAll(response.Body)
			if err != nil {
				t.Fatal(err)
			}
			if response.StatusCode != tt.wantStatus {
				t.Fatalf("status %d (%s), want %d", response.StatusCode, body, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK && string(body) != tt.want {
				t.Errorf("body %q, want %q", body, tt.want)
			}
		})
	}
}

func TestContainerLogsFollowsTheRunUntilItEnds(t *testing.T) {
	process := &podProcess{dir: t.TempDir(), done: make(chan struct{}),
		pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager"}}}}}
	if err := os.WriteFile(process.logPath(), []byte("==== T podrunner starts: x\nstarted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	server := serveContainerLogs(t, map[string]*podProcess{"ns/pod": process})
	response, err := http.Get(server.URL + "/containerLogs/ns/pod/manager?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = response.Body.Close() }()
	// The output so far comes first; only then does the run write more.
	first := make([]byte, len("started\n"))
	if _, err := io.ReadFull(response.Body, first); err != nil || string(first) != "started\n" {
		t.Fatalf("read %q (%v), want the output so far", first, err)
	}
	// The run writes more, then ends: podrunner starts the next run. The follow stops at
	// its start line.
	log, err := os.OpenFile(process.logPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	if _, err := log.WriteString("more\n==== U podrunner starts: x\nnext run\n"); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(response.Body)
	if err != nil || string(rest) != "more\n" {
		t.Errorf("followed %q (%v), want the run's output up to the next run's start, then the end", rest, err)
	}
}

// serveContainerLogs serves a runner's containerLogs endpoint for pods until the test ends.
func serveContainerLogs(t *testing.T, pods map[string]*podProcess) *httptest.Server {
	r := &runner{pods: pods}
	mux := http.NewServeMux()
	mux.HandleFunc(containerLogsPattern, r.containerLogs)
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	return server
}
