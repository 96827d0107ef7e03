package main

import "testing"

func TestRewritePaths(t *testing.T) {
	mounts := hostMounts{
		"/etc/kubernetes/extenders/gpu/ca":     "/tmp/work/volumes/extender-gpu-ca",
		"/etc/kubernetes/extenders/gpu/client": "/tmp/work/volumes/extender-gpu-client",
		"/etc/kubernetes":                      "/tmp/work/volumes/config",
		"/tmp":                                 "/tmp/work/volumes/tmp",
	}
	got := string(mounts.rewritePaths([]byte(`caFile: /etc/kubernetes/extenders/gpu/ca/ca.crt
certFile: /etc/kubernetes/extenders/gpu/client/tls.crt
other: /etc/kubernetes/scheduler/config.yaml
scratch: /tmp/x
untouched: /etc/kubernetesx/y
`)))
	want := `caFile: /tmp/work/volumes/extender-gpu-ca/ca.crt
certFile: /tmp/work/volumes/extender-gpu-client/tls.crt
other: /tmp/work/volumes/config/scheduler/config.yaml
scratch: /tmp/work/volumes/tmp/x
untouched: /etc/kubernetesx/y
`
	if got != want {
		t.Errorf("rewritePaths:\n%s\nwant:\n%s", got, want)
	}
}
