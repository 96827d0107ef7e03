package clusterdial

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A resolver that knows no name, as outside a cluster for Service names.
var noDNS = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no DNS server in this test")
}}

func TestDialerFallsBackToServiceEndpoints(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listener.Close() }()
	go func() {
		for {
			connection, err := listener.Accept()
			if err != nil {
				return
			}
			_, _ = connection.Write([]byte("hello"))
			_ = connection.Close()
		}
	}()
	endpointPort, _ := strconv.Atoi(strings.TrimPrefix(listener.Addr().String(), "127.0.0.1:"))
	reader := fake.NewClientBuilder().WithObjects(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-monitoring", Name: "thanos-querier"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9091}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-monitoring", Name: "thanos-querier-1",
				Labels: map[string]string{discoveryv1.LabelServiceName: "thanos-querier"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("web"), Port: ptr.To(int32(endpointPort))}},
		},
	).Build()
	dialer := &Dialer{Reader: reader, Net: net.Dialer{Timeout: time.Second, Resolver: noDNS}}

	tests := []struct {
		name, address, wantErr string
	}{
		{name: "service name", address: "thanos-querier.openshift-monitoring.svc:9091"},
		{name: "fully qualified service name", address: "thanos-querier.openshift-monitoring.svc.cluster.local:9091"},
		{name: "unknown service", address: "prometheus.monitoring.svc:9090", wantErr: "through its EndpointSlices"},
		{name: "service port not exposed", address: "thanos-querier.openshift-monitoring.svc:8443", wantErr: `no ready endpoint for port "8443"`},
		{name: "other names are not looked up in the cluster", address: "prometheus.example.com:9090", wantErr: "no DNS server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			connection, err := dialer.DialContext(context.Background(), "tcp", tt.address)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DialContext(%s) error = %v, want one containing %q", tt.address, err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "EndpointSlices") && strings.Contains(err.Error(), "<nil>") {
					t.Fatalf("error lost its cause: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DialContext(%s): %v", tt.address, err)
			}
			defer func() { _ = connection.Close() }()
			greeting := make([]byte, 5)
			if _, err := connection.Read(greeting); err != nil || string(greeting) != "hello" {
				t.Fatalf("read %q, %v from the endpoint", greeting, err)
			}
		})
	}
}
