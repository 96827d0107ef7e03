package main

import "testing"

// The composition quoted in scale's explanation is counted from the audit log, as the
// 2026-11-29 run counted it for 500 schedulers.
func TestCreateComposition(t *testing.T) {
	audited := map[requestKey]int{
		{verb: "create", resource: "events", code: 201}: 1496, {verb: "create", resource: "clusterrolebindings", code: 201}: 1000,
		{verb: "create", resource: "rolebindings", code: 201}: 1000, {verb: "create", resource: "deployments", code: 201}: 3000,
		{verb: "patch", resource: "secondaryschedulers/status", code: 200}: 999, {verb: "patch", resource: "secondaryschedulers", code: 200}: 500,
		{verb: "get", resource: "/version", code: 200}: 1,
	}
	want := "10 creates of its objects, which prove a name free without reading it first, 1 finalizer patch, 2 status writes, 3 Events"
	if got := createComposition(audited, 500); got != want {
		t.Errorf("createComposition = %q, want %q", got, want)
	}
}
