// Package promdiscovery finds the Prometheus a load-aware scheduler should read when the
// user gave no address, the way a platform engineer would look for it: OpenShift's
// monitoring stack first, then the Prometheus Operator's, then well-known Services.
package promdiscovery

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Endpoint is a Prometheus HTTP API found in the cluster.
type Endpoint struct {
	// URL is the API root, through the Service's cluster DNS name.
	URL string
	// Source says which object it came from, for status.
	Source string
	// NeedsToken is true when the endpoint authenticates callers (OpenShift's
	// thanos-querier sits behind kube-rbac-proxy).
	NeedsToken bool
	// Prometheus is the Prometheus Operator's Prometheus serving the endpoint, nil when
	// the endpoint is not one.
	Prometheus *OperatedPrometheus
}

// OperatedPrometheus is a monitoring.coreos.com/v1 Prometheus, as far as installing
// recording rules for it goes.
type OperatedPrometheus struct {
	Namespace, Name string
	// RuleSelector is its spec.ruleSelector, nil when it has none (it then loads no
	// PrometheusRule at all).
	RuleSelector *metav1.LabelSelector
}

// Searched says, for a message, where discovery looks.
const Searched = "Service openshift-monitoring/thanos-querier; monitoring.coreos.com/v1 Prometheus objects and their Service prometheus-operated or a Service selecting their pods; " +
	"Services monitoring/prometheus-k8s, */prometheus-server, */*-kube-prometheus-prometheus and Services labelled app.kubernetes.io/name=prometheus"

// PrometheusGVK is the Prometheus Operator's Prometheus kind.
var PrometheusGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"}

// Find returns the first endpoint found, or nil. reader reads Services and Prometheus
// objects across namespaces (uncached: the operator caches neither).
func Find(ctx context.Context, reader client.Reader) (*Endpoint, error) {
	thanos := &corev1.Service{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: "openshift-monitoring", Name: "thanos-querier"}, thanos)
	if err == nil {
		return &Endpoint{URL: serviceURL(thanos, "https"), Source: "Service openshift-monitoring/thanos-querier (OpenShift monitoring)", NeedsToken: true}, nil
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("read Service openshift-monitoring/thanos-querier: %w", err)
	}

	services := &corev1.ServiceList{}
	if err := reader.List(ctx, services); err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	byKey := map[string]*corev1.Service{}
	for i := range services.Items {
		service := &services.Items[i]
		byKey[service.Namespace+"/"+service.Name] = service
	}

	if endpoint, err := findOperated(ctx, reader, byKey); endpoint != nil || err != nil {
		return endpoint, err
	}
	if service, ok := byKey["monitoring/prometheus-k8s"]; ok {
		return wellKnown(service, "kube-prometheus"), nil
	}
	keys := make([]string, 0, len(byKey))
	for key := range byKey {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, match := range []struct {
		matches func(*corev1.Service) bool
		what    string
	}{
		{func(s *corev1.Service) bool { return s.Name == "prometheus-server" }, "the Prometheus Helm chart"},
		{func(s *corev1.Service) bool { return strings.HasSuffix(s.Name, "-kube-prometheus-prometheus") }, "kube-prometheus-stack"},
		{func(s *corev1.Service) bool { return s.Labels["app.kubernetes.io/name"] == "prometheus" }, "label app.kubernetes.io/name=prometheus"},
	} {
		for _, key := range keys {
			if match.matches(byKey[key]) {
				return wellKnown(byKey[key], match.what), nil
			}
		}
	}
	return nil, nil
}

// findOperated finds a Prometheus Operator's Prometheus and its governing Service.
func findOperated(ctx context.Context, reader client.Reader, services map[string]*corev1.Service) (*Endpoint, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PrometheusGVK.GroupVersion().WithKind("PrometheusList"))
	if err := reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || IsMissingKind(err) {
			return nil, nil // no Prometheus Operator in this cluster
		}
		return nil, fmt.Errorf("list Prometheus objects: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].GetNamespace()+"/"+list.Items[i].GetName() < list.Items[j].GetNamespace()+"/"+list.Items[j].GetName()
	})
	for _, prometheus := range list.Items {
		operated, err := operatedPrometheus(&prometheus)
		if err != nil {
			return nil, err
		}
		source := fmt.Sprintf("Prometheus %s/%s (Prometheus Operator), Service ", operated.Namespace, operated.Name)
		if service, ok := services[operated.Namespace+"/prometheus-operated"]; ok {
			return &Endpoint{URL: serviceURL(service, "http"), Source: source + "prometheus-operated", Prometheus: operated}, nil
		}
		if service := selectingService(services, operated); service != nil {
			return &Endpoint{URL: serviceURL(service, "http"), Source: source + service.Name + " (selects its pods)", Prometheus: operated}, nil
		}
	}
	return nil, nil
}

// FindOperated returns the first Prometheus Operator Prometheus with a Service in front
// of it, or nil, for installing recording rules when the user gave the address.
func FindOperated(ctx context.Context, reader client.Reader) (*Endpoint, error) {
	services := &corev1.ServiceList{}
	if err := reader.List(ctx, services); err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	byKey := map[string]*corev1.Service{}
	for i := range services.Items {
		byKey[services.Items[i].Namespace+"/"+services.Items[i].Name] = &services.Items[i]
	}
	return findOperated(ctx, reader, byKey)
}

func operatedPrometheus(prometheus *unstructured.Unstructured) (*OperatedPrometheus, error) {
	operated := &OperatedPrometheus{Namespace: prometheus.GetNamespace(), Name: prometheus.GetName()}
	selector, found, err := unstructured.NestedMap(prometheus.Object, "spec", "ruleSelector")
	if err != nil || !found {
		return operated, nil //nolint:nilerr // a malformed selector selects nothing, like a missing one
	}
	operated.RuleSelector = &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(selector, operated.RuleSelector); err != nil {
		return nil, fmt.Errorf("read spec.ruleSelector of Prometheus %s/%s: %w", operated.Namespace, operated.Name, err)
	}
	return operated, nil
}

// selectingService is a Service of prometheus's namespace whose selector picks its pods,
// going by the labels the Prometheus Operator gives them.
func selectingService(services map[string]*corev1.Service, prometheus *OperatedPrometheus) *corev1.Service {
	podLabels := map[string]string{
		"app.kubernetes.io/name":       "prometheus",
		"app.kubernetes.io/instance":   prometheus.Name,
		"app.kubernetes.io/managed-by": "prometheus-operator",
		"prometheus":                   prometheus.Name,
		"operator.prometheus.io/name":  prometheus.Name,
	}
	keys := make([]string, 0, len(services))
	for key, service := range services {
		if service.Namespace == prometheus.Namespace {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		selector := services[key].Spec.Selector
		if len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(podLabels)) {
			return services[key]
		}
	}
	return nil
}

// IsMissingKind reports whether err says the API server does not serve the kind asked for.
func IsMissingKind(err error) bool {
	return strings.Contains(err.Error(), "the server could not find the requested resource")
}

func wellKnown(service *corev1.Service, what string) *Endpoint {
	return &Endpoint{URL: serviceURL(service, "http"), Source: fmt.Sprintf("Service %s/%s (%s)", service.Namespace, service.Name, what)}
}

// webPort is the name that Prometheus, Thanos and their charts give their HTTP port.
const webPort = "web"

// serviceURL is scheme://name.namespace.svc:port, with the port named web, else the first.
func serviceURL(service *corev1.Service, scheme string) string {
	portName := webPort
	port := int32(0)
	for _, p := range service.Spec.Ports {
		if p.Name == portName || port == 0 {
			port = p.Port
		}
		if p.Name == portName {
			break
		}
	}
	host := service.Name + "." + service.Namespace + ".svc"
	if port == 0 {
		return scheme + "://" + host
	}
	return fmt.Sprintf("%s://%s:%d", scheme, host, port)
}
