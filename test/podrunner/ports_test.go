package main

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// managerContainer is the operator's own container, as config/manager/manager.yaml has it.
func managerContainer() corev1.Container {
	return corev1.Container{
		Command: []string{"/manager"},
		Args:    []string{"--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443"},
		Ports:   []corev1.ContainerPort{{Name: "https-metrics", ContainerPort: 8443}},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8081)}}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8081)}}},
	}
}

// schedulerContainer is the scheduler container the operator renders (bindata/assets/deployment.yaml).
func schedulerContainer() corev1.Container {
	return corev1.Container{
		Command:      []string{"/bin/kube-scheduler", "--config=/etc/kubernetes/scheduler/config.yaml"},
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/kubernetes/scheduler"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(10259), Scheme: corev1.URISchemeHTTPS}}},
	}
}

func TestContainerPorts(t *testing.T) {
	namedProbe := corev1.Container{
		Ports: []corev1.ContainerPort{{Name: "health", ContainerPort: 8081}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}}},
	}
	unknownName := namedProbe
	unknownName.Ports = nil
	tests := []struct {
		name      string
		container corev1.Container
		want      []int32
		wantErr   bool
	}{
		{name: "ports and probe ports", container: managerContainer(), want: []int32{8443, 8081, 8081}},
		{name: "probe port by name", container: namedProbe, want: []int32{8081, 8081}},
		{name: "kube-scheduler's secure port, declared or not", container: schedulerContainer(), want: []int32{10259, 10259}},
		{name: "probe port naming no port", container: unknownName, wantErr: true},
		{name: "none", container: corev1.Container{Command: []string{"/pause"}}, want: []int32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := containerPorts(tt.container)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostPortPool(t *testing.T) {
	pool := newHostPortPool()
	if pool.high >= ephemeralPortsStart() && pool.low < ephemeralPortsStart() {
		t.Fatalf("the pool's range %d-%d overlaps the ephemeral range from %d", pool.low, pool.high, ephemeralPortsStart())
	}
	first, err := pool.allocate([]int32{8443, 8081, 8081, 10259})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 3 || first[8443] == first[8081] || first[8081] == first[10259] || first[8443] == first[10259] {
		t.Errorf("want three distinct host ports, got %v", first)
	}
	for _, port := range first {
		if port < pool.low || port > pool.high {
			t.Errorf("port %d is outside the pool's range %d-%d", port, pool.low, pool.high)
		}
	}

	// Another pod's ports are none of the first's, while the first holds them.
	second, err := pool.allocate([]int32{8443, 10259})
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range second {
		if slices.Contains(slices.Collect(maps.Values(first)), port) {
			t.Errorf("port %d given to two pods: %v and %v", port, first, second)
		}
	}
	pool.release(first)
	pool.release(second)
	if len(pool.taken) != 0 {
		t.Errorf("released ports still taken: %v", pool.taken)
	}

	// A port something listens on is passed over.
	listener, err := net.Listen("tcp", ":"+strconv.Itoa(pool.next))
	if err != nil {
		t.Skipf("cannot listen on the pool's next port %d: %v", pool.next, err)
	}
	defer listener.Close()
	busy := listener.Addr().(*net.TCPAddr).Port
	third, err := pool.allocate([]int32{10259})
	if err != nil {
		t.Fatal(err)
	}
	if third[10259] == busy {
		t.Errorf("port %d, which a listener holds, was given out", busy)
	}
}

func TestHostPortPoolGivesBackWhatAFailedAllocationTook(t *testing.T) {
	pool := &hostPortPool{low: 40000, high: 40000, next: 40000, taken: map[int]bool{}}
	if !listenable(40000) {
		t.Skip("port 40000 is in use on this machine")
	}
	if _, err := pool.allocate([]int32{8443, 8081}); err == nil {
		t.Fatal("two ports from a pool of one: want an error")
	}
	if len(pool.taken) != 0 {
		t.Errorf("a failed allocation kept %v", pool.taken)
	}
}

func TestHostCommand(t *testing.T) {
	ports := hostPorts{8081: 40081, 8443: 40443, 10259: 40259, 10258: 40258}
	mounts := hostMounts{"/etc/kubernetes/scheduler": "/var/lib/podrunner/volumes/config"}
	kubeconfig := "/var/lib/podrunner/kubeconfig"
	withArgs := func(container corev1.Container, args ...string) corev1.Container {
		container.Args = args
		return container
	}
	tests := []struct {
		name      string
		container corev1.Container
		want      []string
	}{
		{
			name:      "manager: listen addresses on declared ports move to host ports, no extra flags",
			container: managerContainer(),
			want:      []string{"/host/binary", "--leader-elect", "--health-probe-bind-address=127.0.0.1:40081", "--metrics-bind-address=127.0.0.1:40443"},
		},
		{
			name:      "address forms, whole argument or flag value",
			container: withArgs(managerContainer(), "--bind", ":8081", "--a=0.0.0.0:8443", "--b=localhost:8443", "--c=[::]:8081", "--d=10.0.0.1:10259"),
			want: []string{"/host/binary", "--bind", "127.0.0.1:40081", "--a=127.0.0.1:40443", "--b=127.0.0.1:40443",
				"--c=127.0.0.1:40081", "--d=127.0.0.1:40259"},
		},
		{
			name:      "undeclared ports and other values stay",
			container: withArgs(managerContainer(), "--e=:9090", "--f=https://example.com:8443/x", "--g=8443", "--leader-elect=true"),
			want:      []string{"/host/binary", "--e=:9090", "--f=https://example.com:8443/x", "--g=8443", "--leader-elect=true"},
		},
		{
			name:      "kube-scheduler: mount paths moved, secure port and in-cluster kubeconfigs added",
			container: schedulerContainer(),
			want: []string{"/host/binary", "--config=/var/lib/podrunner/volumes/config/config.yaml",
				"--secure-port=40259", "--authentication-kubeconfig=/var/lib/podrunner/kubeconfig", "--authorization-kubeconfig=/var/lib/podrunner/kubeconfig"},
		},
		{
			name: "descheduler: its secure port moved, which every replica on the host would take",
			container: corev1.Container{Command: []string{"/bin/descheduler", "--policy-config-file=/etc/kubernetes/scheduler/policy.yaml"},
				Ports: []corev1.ContainerPort{{ContainerPort: 10258}}},
			want: []string{"/host/binary", "--policy-config-file=/var/lib/podrunner/volumes/config/policy.yaml", "--secure-port=40258"},
		},
		{
			name:      "a program named otherwise is no kube-scheduler",
			container: corev1.Container{Command: []string{"/bin/kube-scheduler-wrapper", "--config=/etc/kubernetes/scheduler/config.yaml"}},
			want:      []string{"/host/binary", "--config=/var/lib/podrunner/volumes/config/config.yaml"},
		},
		{
			name:      "no command: the binary is the image's entrypoint",
			container: corev1.Container{Args: []string{"--metrics-bind-address=:8443"}},
			want:      []string{"/host/binary", "--metrics-bind-address=127.0.0.1:40443"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hostCommand("/host/binary", tt.container, mounts, ports, kubeconfig)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewHTTPProbe(t *testing.T) {
	ports := hostPorts{8081: 40081, 10259: 40259}
	namedPort := corev1.Container{Ports: []corev1.ContainerPort{{Name: "health", ContainerPort: 8081}}}
	tests := []struct {
		name      string
		container corev1.Container
		probe     *corev1.Probe
		want      *httpProbe
	}{
		{
			name:      "numeric port, timings kept",
			container: managerContainer(),
			probe: &corev1.Probe{InitialDelaySeconds: 15, PeriodSeconds: 20, FailureThreshold: 5,
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8081)}}},
			want: &httpProbe{url: "http://127.0.0.1:40081/healthz", initialDelay: 15 * time.Second, period: 20 * time.Second, failureThreshold: 5},
		},
		{
			name:      "named port, API server defaults",
			container: namedPort,
			probe:     &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}}},
			want:      &httpProbe{url: "http://127.0.0.1:40081/readyz", period: 10 * time.Second, failureThreshold: 3},
		},
		{
			name:      "kube-scheduler's HTTPS probe on its secure port",
			container: schedulerContainer(),
			probe:     schedulerContainer().ReadinessProbe,
			want:      &httpProbe{url: "https://127.0.0.1:40259/readyz", period: 10 * time.Second, failureThreshold: 3},
		},
		{name: "no probe", container: managerContainer()},
		{
			name:      "not an httpGet probe",
			container: managerContainer(),
			probe:     &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newHTTPProbe(tt.container, tt.probe, ports)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(httpProbe{})); diff != "" {
				t.Errorf("probe (-want +got):\n%s", diff)
			}
		})
	}
}
