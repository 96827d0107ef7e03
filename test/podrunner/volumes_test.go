package main

import "testing"

func TestRewritePaths(t *testing.T) {
	mounts := hostMounts{
		"/etc/kubernetes/extenders/gpu/ca":     "/data/pods/volumes/extender-gpu-ca",
		"/etc/kubernetes/extenders/gpu/client": "/data/pods/volumes/extender-gpu-client",
		"/etc/kubernetes":                      "/data/pods/volumes/config",
		"/data":                                "/data/pods/volumes/data",
	}
	got := string(mounts.rewritePaths([]byte(`caFile: /etc/kubernetes/extenders/gpu/ca/ca.crt
certFile: /etc/kubernetes/extenders/gpu/client/tls.crt
other: /etc/kubernetes/scheduler/config.yaml
scratch: /data/x
untouched: /etc/kubernetesx/y
`)))
	want := `caFile: /data/pods/volumes/extender-gpu-ca/ca.crt
certFile: /data/pods/volumes/extender-gpu-client/tls.crt
other: /data/pods/volumes/config/scheduler/config.yaml
scratch: /data/pods/volumes/data/x
untouched: /etc/kubernetesx/y
`
	if got != want {
		t.Errorf("rewritePaths:\n%s\nwant:\n%s", got, want)
	}
}
