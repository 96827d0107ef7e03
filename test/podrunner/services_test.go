package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
