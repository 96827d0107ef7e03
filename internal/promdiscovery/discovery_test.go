package promdiscovery

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func service(namespace, name string, labels map[string]string, port int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: 8080}, {Name: "web", Port: port}}}}
}

// rbac refuses what an operator installed for its own namespace may not do: reading
// other namespaces, and listing across all of them.
func rbac(ownNamespace string) interceptor.Funcs {
	forbidden := func(resource string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", nil)
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, object client.Object, opts ...client.GetOption) error {
			if key.Namespace != ownNamespace {
				return forbidden("services")
			}
			return c.Get(ctx, key, object, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			listOptions := &client.ListOptions{}
			listOptions.ApplyOptions(opts)
			if listOptions.Namespace != ownNamespace {
				return forbidden("services")
			}
			return c.List(ctx, list, opts...)
		},
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name          string
		objects       []client.Object
		ownNamespace  string // set: the operator may read this namespace only
		wantURL       string
		wantSource    string
		wantForbidden []string
	}{
		{
			name:       "OpenShift monitoring, https with a token",
			objects:    []client.Object{service("openshift-monitoring", "thanos-querier", nil, 9091), service("monitoring", "prometheus-k8s", nil, 9090)},
			wantURL:    "https://thanos-querier.openshift-monitoring.svc:9091",
			wantSource: "Service openshift-monitoring/thanos-querier (OpenShift monitoring)",
		},
		{
			name:       "kube-prometheus, the web port",
			objects:    []client.Object{service("monitoring", "prometheus-k8s", nil, 9090), service("apps", "prometheus-server", nil, 80)},
			wantURL:    "http://prometheus-k8s.monitoring.svc:9090",
			wantSource: "Service monitoring/prometheus-k8s (kube-prometheus)",
		},
		{
			name:       "kube-prometheus-stack",
			objects:    []client.Object{service("observability", "stack-kube-prometheus-prometheus", nil, 9090)},
			wantURL:    "http://stack-kube-prometheus-prometheus.observability.svc:9090",
			wantSource: "Service observability/stack-kube-prometheus-prometheus (kube-prometheus-stack)",
		},
		{
			name:       "a labelled Service",
			objects:    []client.Object{service("metrics", "prom", map[string]string{"app.kubernetes.io/name": "prometheus"}, 9090)},
			wantURL:    "http://prom.metrics.svc:9090",
			wantSource: "Service metrics/prom (label app.kubernetes.io/name=prometheus)",
		},
		{
			name:    "nothing",
			objects: []client.Object{service("default", "kubernetes", nil, 443)},
		},
		{
			name:          "own namespace only: found there, and the rest said",
			objects:       []client.Object{service("openshift-monitoring", "thanos-querier", nil, 9091), service("team", "prometheus-server", nil, 80)},
			ownNamespace:  "team",
			wantURL:       "http://prometheus-server.team.svc:80",
			wantSource:    "Service team/prometheus-server (the Prometheus Helm chart)",
			wantForbidden: []string{"Service openshift-monitoring/thanos-querier", "Services of other namespaces than team"},
		},
		{
			name:          "own namespace only: nothing there",
			objects:       []client.Object{service("monitoring", "prometheus-k8s", nil, 9090)},
			ownNamespace:  "team",
			wantForbidden: []string{"Service openshift-monitoring/thanos-querier", "Services of other namespaces than team"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			builder := fake.NewClientBuilder().WithObjects(tt.objects...)
			if tt.ownNamespace != "" {
				builder = builder.WithInterceptorFuncs(rbac(tt.ownNamespace))
			}
			endpoint, forbidden, err := Find(context.Background(), builder.Build(), tt.ownNamespace)
			if err != nil {
				t.Fatal(err)
			}
			gotURL, gotSource := "", ""
			if endpoint != nil {
				gotURL, gotSource = endpoint.URL, endpoint.Source
			}
			if gotURL != tt.wantURL || gotSource != tt.wantSource {
				t.Errorf("found %q from %q, want %q from %q", gotURL, gotSource, tt.wantURL, tt.wantSource)
			}
			// Prometheus objects are refused as well, or their kind is unknown here.
			forbidden = slices.DeleteFunc(forbidden, func(place string) bool { return place == "Prometheus objects of other namespaces than team" })
			if !slices.Equal(forbidden, tt.wantForbidden) {
				t.Errorf("forbidden places %q, want %q", forbidden, tt.wantForbidden)
			}
		})
	}
}
