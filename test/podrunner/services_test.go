package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestResolveServiceHosts(t *testing.T) {
	reader := fake.NewClientBuilder().WithObjects(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus-k8s"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9090}, {Name: "reloader", Port: 8080}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus-k8s-abc",
				Labels: map[string]string{discoveryv1.LabelServiceName: "prometheus-k8s"}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.1.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
				{Addresses: []string{"10.1.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("reloader"), Port: ptr.To[int32](18080)}, {Name: ptr.To("web"), Port: ptr.To[int32](19090)}},
		},
	).Build()
	tests := []struct{ name, in, want string }{
		{"service port to endpoint port", "address: http://prometheus-k8s.monitoring.svc:9090/api", "address: http://10.1.0.7:19090/api"},
		{"cluster.local suffix", "https://prometheus-k8s.monitoring.svc.cluster.local:8080", "https://10.1.0.7:18080"},
		{"no port", "host: prometheus-k8s.monitoring.svc", "host: 10.1.0.7"},
		{"unknown service stays", "http://thanos.monitoring.svc:9091", "http://thanos.monitoring.svc:9091"},
		{"unknown port stays", "http://prometheus-k8s.monitoring.svc:1234", "http://prometheus-k8s.monitoring.svc:1234"},
		{"other text stays", "kind: KubeSchedulerConfiguration", "kind: KubeSchedulerConfiguration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(resolveServiceHosts(context.Background(), reader, []byte(tt.in))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHostsFile(t *testing.T) {
	ready := discoveryv1.EndpointConditions{Ready: ptr.To(true)}
	service := func(namespace, name string, spec corev1.ServiceSpec) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
	}
	slice := func(namespace, service string, ports []discoveryv1.EndpointPort, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: service + "-x",
			Labels: map[string]string{discoveryv1.LabelServiceName: service}}, Endpoints: endpoints, Ports: ports}
	}
	port := func(name string, number int32) discoveryv1.EndpointPort {
		return discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(number)}
	}
	reader := fake.NewClientBuilder().WithObjects(
		// Headless: its endpoints' addresses, as cluster DNS answers, the unready left out.
		service("monitoring", "prometheus-operated", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "web", Port: 9090, TargetPort: intstr.FromString("web")}}}),
		slice("monitoring", "prometheus-operated", []discoveryv1.EndpointPort{port("web", 9090)},
			discoveryv1.Endpoint{Addresses: []string{"10.1.0.7"}, Conditions: ready},
			discoveryv1.Endpoint{Addresses: []string{"10.1.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}),
		// A cluster IP whose every port its endpoints serve on the same number.
		service("monitoring", "prometheus-k8s", corev1.ServiceSpec{ClusterIP: "10.96.0.20",
			Ports: []corev1.ServicePort{{Name: "web", Port: 9090}, {Name: "reloader", Port: 8080}}}),
		slice("monitoring", "prometheus-k8s", []discoveryv1.EndpointPort{port("reloader", 8080), port("web", 9090)},
			discoveryv1.Endpoint{Addresses: []string{"10.1.0.7"}}),
		// Left out: a port the endpoints serve on another number, one they lack, ExternalName.
		service("web", "front", corev1.ServiceSpec{ClusterIP: "10.96.0.21", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}),
		slice("web", "front", []discoveryv1.EndpointPort{port("http", 8080)}, discoveryv1.Endpoint{Addresses: []string{"10.1.0.8"}, Conditions: ready}),
		service("web", "two-ports", corev1.ServiceSpec{ClusterIP: "10.96.0.22", Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "admin", Port: 81}}}),
		slice("web", "two-ports", []discoveryv1.EndpointPort{port("http", 80)}, discoveryv1.Endpoint{Addresses: []string{"10.1.0.8"}, Conditions: ready}),
		service("web", "elsewhere", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}),
		// No endpoint: no line.
		service("web", "empty", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}),
	).Build()
	got, err := hostsFile(context.Background(), reader, []byte("127.0.0.1 localhost"))
	if err != nil {
		t.Fatal(err)
	}
	want := `127.0.0.1 localhost
# The cluster's Services, written by podrunner
10.1.0.7 prometheus-k8s.monitoring.svc prometheus-k8s.monitoring.svc.cluster.local
10.1.0.7 prometheus-operated.monitoring.svc prometheus-operated.monitoring.svc.cluster.local
`
	if string(got) != want {
		t.Errorf("hosts file:\n%s\nwant:\n%s", got, want)
	}
}
