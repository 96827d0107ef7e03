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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Find returns the first endpoint found, or nil, and the places the operator was not
// allowed to look, for a message. reader reads Services and Prometheus objects across
// namespaces (uncached: the operator caches neither); where RBAC allows less, as with an
// operator installed for its own namespace only, discovery looks in ownNamespace instead.
func Find(ctx context.Context, reader client.Reader, ownNamespace string) (*Endpoint, []string, error) {
	var forbidden []string
	thanos := &corev1.Service{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: "openshift-monitoring", Name: "thanos-querier"}, thanos)
	switch {
	case err == nil:
		return &Endpoint{URL: serviceURL(thanos, "https"), Source: "Service openshift-monitoring/thanos-querier (OpenShift monitoring)", NeedsToken: true}, nil, nil
	case apierrors.IsForbidden(err):
		forbidden = append(forbidden, "Service openshift-monitoring/thanos-querier")
	case !apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("read Service openshift-monitoring/thanos-querier: %w", err)
	}

	byKey, blind, err := visibleServices(ctx, reader, ownNamespace)
	if err != nil {
		return nil, nil, err
	}
	forbidden = append(forbidden, blind...)
	endpoint, blind, err := findOperated(ctx, reader, byKey, ownNamespace)
	forbidden = append(forbidden, blind...)
	if endpoint != nil || err != nil {
		return endpoint, forbidden, err
	}
	return findWellKnown(byKey), forbidden, nil
}

// visibleServices are the Services of every namespace, keyed namespace/name, or those of
// ownNamespace when the operator may not list them all.
func visibleServices(ctx context.Context, reader client.Reader, ownNamespace string) (map[string]*corev1.Service, []string, error) {
	var forbidden []string
	services := &corev1.ServiceList{}
	err := reader.List(ctx, services)
	if apierrors.IsForbidden(err) && ownNamespace != "" {
		forbidden = append(forbidden, "Services of other namespaces than "+ownNamespace)
		err = reader.List(ctx, services, client.InNamespace(ownNamespace))
	}
	if apierrors.IsForbidden(err) {
		return nil, append(forbidden, "Services"), nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list Services: %w", err)
	}
	byKey := map[string]*corev1.Service{}
	for i := range services.Items {
		service := &services.Items[i]
		byKey[service.Namespace+"/"+service.Name] = service
	}
	return byKey, forbidden, nil
}

// findWellKnown finds the Services of kube-prometheus and of common Helm charts.
func findWellKnown(byKey map[string]*corev1.Service) *Endpoint {
	if service, ok := byKey["monitoring/prometheus-k8s"]; ok {
		return wellKnown(service, "kube-prometheus")
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
				return wellKnown(byKey[key], match.what)
			}
		}
	}
	return nil
}

// findOperated finds a Prometheus Operator's Prometheus and a Service in front of it,
// looking in ownNamespace when the operator may not list Prometheus objects everywhere.
func findOperated(ctx context.Context, reader client.Reader, services map[string]*corev1.Service, ownNamespace string) (*Endpoint, []string, error) {
	var forbidden []string
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PrometheusGVK.GroupVersion().WithKind("PrometheusList"))
	err := reader.List(ctx, list)
	if apierrors.IsForbidden(err) && ownNamespace != "" {
		forbidden = append(forbidden, "Prometheus objects of other namespaces than "+ownNamespace)
		err = reader.List(ctx, list, client.InNamespace(ownNamespace))
	}
	switch {
	case meta.IsNoMatchError(err) || IsMissingKind(err):
		return nil, forbidden, nil // no Prometheus Operator in this cluster
	case apierrors.IsForbidden(err):
		return nil, append(forbidden, "Prometheus objects"), nil
	case err != nil:
		return nil, nil, fmt.Errorf("list Prometheus objects: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].GetNamespace()+"/"+list.Items[i].GetName() < list.Items[j].GetNamespace()+"/"+list.Items[j].GetName()
	})
	for _, prometheus := range list.Items {
		operated, err := operatedPrometheus(&prometheus)
		if err != nil {
			return nil, nil, err
		}
		source := fmt.Sprintf("Prometheus %s/%s (Prometheus Operator), Service ", operated.Namespace, operated.Name)
		if service, ok := services[operated.Namespace+"/prometheus-operated"]; ok {
			return &Endpoint{URL: serviceURL(service, "http"), Source: source + "prometheus-operated", Prometheus: operated}, forbidden, nil
		}
		if service := selectingService(services, operated); service != nil {
			return &Endpoint{URL: serviceURL(service, "http"), Source: source + service.Name + " (selects its pods)", Prometheus: operated}, forbidden, nil
		}
	}
	return nil, forbidden, nil
}

// FindOperated returns the first Prometheus Operator Prometheus with a Service in front
// of it, or nil, for installing recording rules when the user gave the address.
func FindOperated(ctx context.Context, reader client.Reader, ownNamespace string) (*Endpoint, error) {
	byKey, _, err := visibleServices(ctx, reader, ownNamespace)
	if err != nil {
		return nil, err
	}
	endpoint, _, err := findOperated(ctx, reader, byKey, ownNamespace)
	return endpoint, err
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
	return err != nil && strings.Contains(err.Error(), "the server could not find the requested resource")
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
