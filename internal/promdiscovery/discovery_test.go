package promdiscovery

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func service(namespace, name string, labels map[string]string, port int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: 8080}, {Name: "web", Port: port}}}}
}

func prometheus(namespace, name string) *unstructured.Unstructured {
	object := &unstructured.Unstructured{}
	object.SetGroupVersionKind(PrometheusGVK)
	object.SetNamespace(namespace)
	object.SetName(name)
	return object
}

// apiServer plays the API server's authorization for discovery: it refuses reads in the
// forbidden namespaces, and fails the test on any list across all namespaces, which would
// reach Services a tenant created.
func apiServer(t *testing.T, forbidden []string) interceptor.Funcs {
	refused := func(namespace string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "", fmt.Errorf("namespace %s", namespace))
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, object client.Object, opts ...client.GetOption) error {
			if slices.Contains(forbidden, key.Namespace) {
				return refused(key.Namespace)
			}
			return c.Get(ctx, key, object, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			listOptions := &client.ListOptions{}
			listOptions.ApplyOptions(opts)
			if listOptions.Namespace == "" {
				t.Errorf("discovery listed %T across all namespaces", list)
			}
			if slices.Contains(forbidden, listOptions.Namespace) {
				return refused(listOptions.Namespace)
			}
			return c.List(ctx, list, opts...)
		},
	}
}

// monitoringNamespaces are namespaces a cluster admin might list for discovery, each
// searched as the well-known installation that uses it.
var monitoringNamespaces = []string{"openshift-monitoring", "monitoring", "prometheus", "kube-prometheus-stack", "observability"}

// TestDefaultNamespacesNoTenantCanCreate: discovery sends schedulers' metrics tokens to what
// it finds, so by default it searches only namespaces a tenant cannot create where they do
// not exist. OpenShift reserves the openshift- prefix; nothing reserves monitoring.
func TestDefaultNamespacesNoTenantCanCreate(t *testing.T) {
	for _, namespace := range DefaultNamespaces {
		if !strings.HasPrefix(namespace, "openshift-") {
			t.Errorf("default discovery namespace %s is not reserved: whoever may create namespaces could create it and receive metrics tokens", namespace)
		}
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name       string
		objects    []client.Object
		namespaces []string
		// forbidden are the namespaces the operator may not read.
		forbidden      []string
		wantURL        string
		wantSource     string
		wantUnsearched []string
	}{
		{
			name:       "OpenShift monitoring, https with a token",
			objects:    []client.Object{service("openshift-monitoring", "thanos-querier", nil, 9091), service("monitoring", "prometheus-k8s", nil, 9090)},
			namespaces: monitoringNamespaces,
			wantURL:    "https://thanos-querier.openshift-monitoring.svc:9091",
			wantSource: "Service openshift-monitoring/thanos-querier (OpenShift monitoring)",
		},
		{
			name:       "thanos-querier ignored when openshift-monitoring is not listed",
			objects:    []client.Object{service("openshift-monitoring", "thanos-querier", nil, 9091), service("monitoring", "prometheus-k8s", nil, 9090)},
			namespaces: []string{"monitoring"},
			wantURL:    "http://prometheus-k8s.monitoring.svc:9090",
			wantSource: "Service monitoring/prometheus-k8s (kube-prometheus)",
		},
		{
			name:       "kube-prometheus, the web port",
			objects:    []client.Object{service("monitoring", "prometheus-k8s", nil, 9090), service("prometheus", "prometheus-server", nil, 80)},
			namespaces: monitoringNamespaces,
			wantURL:    "http://prometheus-k8s.monitoring.svc:9090",
			wantSource: "Service monitoring/prometheus-k8s (kube-prometheus)",
		},
		{
			name:       "kube-prometheus-stack",
			objects:    []client.Object{service("observability", "stack-kube-prometheus-prometheus", nil, 9090)},
			namespaces: monitoringNamespaces,
			wantURL:    "http://stack-kube-prometheus-prometheus.observability.svc:9090",
			wantSource: "Service observability/stack-kube-prometheus-prometheus (kube-prometheus-stack)",
		},
		{
			name:       "a labelled Service in a namespace the admin added",
			objects:    []client.Object{service("metrics", "prom", map[string]string{"app.kubernetes.io/name": "prometheus"}, 9090)},
			namespaces: []string{"monitoring", "metrics"},
			wantURL:    "http://prom.metrics.svc:9090",
			wantSource: "Service metrics/prom (label app.kubernetes.io/name=prometheus)",
		},
		{
			name:       "the earlier namespace of the list wins",
			objects:    []client.Object{service("monitoring", "prometheus-server", nil, 80), service("prometheus", "prometheus-server", nil, 80)},
			namespaces: []string{"prometheus", "monitoring"},
			wantURL:    "http://prometheus-server.prometheus.svc:80",
			wantSource: "Service prometheus/prometheus-server (the Prometheus Helm chart)",
		},
		{
			name: "well-known Services in a tenant namespace are not found",
			objects: []client.Object{service("team", "prometheus-server", nil, 80), service("team", "x-kube-prometheus-prometheus", nil, 9090),
				service("team", "prom", map[string]string{"app.kubernetes.io/name": "prometheus"}, 9090), service("team", "prometheus-k8s", nil, 9090)},
			namespaces: monitoringNamespaces,
		},
		{
			name: "a tenant's Service that sorts first loses to the listed namespace's",
			objects: []client.Object{service("a-team", "prometheus-server", nil, 80), service("monitoring", "prometheus-server", nil, 9090),
				service("a-team", "prometheus-operated", nil, 9090), prometheus("a-team", "k8s")},
			namespaces: monitoringNamespaces,
			wantURL:    "http://prometheus-server.monitoring.svc:9090",
			wantSource: "Service monitoring/prometheus-server (the Prometheus Helm chart)",
		},
		{
			name:       "a Prometheus Operator Prometheus wins over well-known Services",
			objects:    []client.Object{service("monitoring", "prometheus-k8s", nil, 9090), service("observability", "prometheus-operated", nil, 9090), prometheus("observability", "main")},
			namespaces: monitoringNamespaces,
			wantURL:    "http://prometheus-operated.observability.svc:9090",
			wantSource: "Prometheus observability/main (Prometheus Operator), Service prometheus-operated",
		},
		{
			name:       "a Prometheus in a tenant namespace is not found",
			objects:    []client.Object{service("team", "prometheus-operated", nil, 9090), prometheus("team", "main"), service("monitoring", "prometheus-k8s", nil, 9090)},
			namespaces: monitoringNamespaces,
			wantURL:    "http://prometheus-k8s.monitoring.svc:9090",
			wantSource: "Service monitoring/prometheus-k8s (kube-prometheus)",
		},
		{
			name:    "nothing",
			objects: []client.Object{service("default", "kubernetes", nil, 443)},
		},
		{
			name:       "an empty namespace name does not mean all namespaces",
			objects:    []client.Object{service("monitoring", "prometheus-k8s", nil, 9090)},
			namespaces: []string{""},
		},
		{
			name:       "forbidden namespaces skipped and reported, found in the next",
			objects:    []client.Object{service("openshift-monitoring", "thanos-querier", nil, 9091), service("monitoring", "prometheus-k8s", nil, 9090), service("prometheus", "prometheus-server", nil, 80)},
			namespaces: monitoringNamespaces,
			forbidden:  []string{"openshift-monitoring", "monitoring"},
			wantURL:    "http://prometheus-server.prometheus.svc:80",
			wantSource: "Service prometheus/prometheus-server (the Prometheus Helm chart)",
			wantUnsearched: []string{"Service openshift-monitoring/thanos-querier", "Prometheus objects in namespace openshift-monitoring",
				"Prometheus objects in namespace monitoring", "Services in namespace openshift-monitoring", "Services in namespace monitoring"},
		},
		{
			name:           "forbidden namespace, nothing elsewhere",
			objects:        []client.Object{service("monitoring", "prometheus-k8s", nil, 9090)},
			namespaces:     []string{"monitoring", "prometheus"},
			forbidden:      []string{"monitoring"},
			wantUnsearched: []string{"Prometheus objects in namespace monitoring", "Services in namespace monitoring"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := fake.NewClientBuilder().WithObjects(tt.objects...).WithInterceptorFuncs(apiServer(t, tt.forbidden)).Build()
			endpoint, unsearched, err := Find(context.Background(), reader, tt.namespaces)
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
			if !slices.Equal(unsearched, tt.wantUnsearched) {
				t.Errorf("unsearched places %q, want %q", unsearched, tt.wantUnsearched)
			}
		})
	}
}

func TestFindOperated(t *testing.T) {
	tests := []struct {
		name       string
		objects    []client.Object
		namespaces []string
		forbidden  []string
		wantSource string
	}{
		{
			name:       "in a listed namespace, through a Service selecting its pods",
			objects:    []client.Object{prometheus("monitoring", "k8s"), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "k8s-web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"prometheus": "k8s"}}}},
			namespaces: monitoringNamespaces,
			wantSource: "Prometheus monitoring/k8s (Prometheus Operator), Service k8s-web (selects its pods)",
		},
		{
			name:       "thanos-querier is no Prometheus Operator Prometheus",
			objects:    []client.Object{service("openshift-monitoring", "thanos-querier", nil, 9091)},
			namespaces: monitoringNamespaces,
		},
		{
			name:       "in a tenant namespace: not found",
			objects:    []client.Object{prometheus("team", "k8s"), service("team", "prometheus-operated", nil, 9090)},
			namespaces: monitoringNamespaces,
		},
		{
			name:       "a forbidden namespace is skipped",
			objects:    []client.Object{prometheus("monitoring", "k8s"), service("monitoring", "prometheus-operated", nil, 9090), prometheus("observability", "main"), service("observability", "prometheus-operated", nil, 9090)},
			namespaces: monitoringNamespaces,
			forbidden:  []string{"monitoring"},
			wantSource: "Prometheus observability/main (Prometheus Operator), Service prometheus-operated",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := fake.NewClientBuilder().WithObjects(tt.objects...).WithInterceptorFuncs(apiServer(t, tt.forbidden)).Build()
			endpoint, err := FindOperated(context.Background(), reader, tt.namespaces)
			if err != nil {
				t.Fatal(err)
			}
			gotSource := ""
			if endpoint != nil {
				gotSource = endpoint.Source
				if endpoint.Prometheus == nil {
					t.Errorf("endpoint %+v names no Prometheus", endpoint)
				}
			}
			if gotSource != tt.wantSource {
				t.Errorf("found %q, want %q", gotSource, tt.wantSource)
			}
		})
	}
}

func TestSearchedIn(t *testing.T) {
	tests := []struct {
		name       string
		namespaces []string
		want       string
	}{
		{name: "the namespaces, once each", namespaces: []string{"monitoring", "", "observability", "monitoring"}, want: ", in namespaces monitoring, observability"},
		{name: "none", namespaces: []string{""}, want: "nothing: no namespace is configured for Prometheus discovery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SearchedIn(tt.namespaces); !strings.HasSuffix(got, tt.want) {
				t.Errorf("SearchedIn(%q) = %q, want it to end in %q", tt.namespaces, got, tt.want)
			}
		})
	}
}
