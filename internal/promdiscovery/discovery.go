// Package promdiscovery finds the Prometheus a load-aware scheduler should read when the
// user gave no address, the way a platform engineer would look for it: OpenShift's
// monitoring stack first, then the Prometheus Operator's, then well-known Services. It
// looks only in the namespaces the cluster admin names, since the endpoint it finds is
// sent a scheduler's metrics token.
package promdiscovery

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
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

// DefaultNamespaces are where discovery looks on OpenShift when the cluster admin names no
// namespaces (Defaults adds the operator's own): openshift-monitoring, OpenShift's cluster
// monitoring, with thanos-querier. Discovery trusts whatever Service it finds there with a
// scheduler's metrics token, so a namespace must be one that exists and that no tenant can
// create or write to: OpenShift reserves the openshift- prefix. Elsewhere nothing reserves
// it, and whoever may create namespaces could create openshift-monitoring, so Defaults
// leaves it out off OpenShift. Common names such as monitoring or prometheus are never
// defaults, since where they do not exist whoever may create a namespace (on OpenShift,
// any self-provisioning user) could take them; an admin lists them with the operator's
// --prometheus-namespaces.
var DefaultNamespaces = []string{openShiftMonitoring}

// openShiftMonitoring is the namespace of OpenShift's cluster monitoring.
const openShiftMonitoring = "openshift-monitoring"

// openShiftConfigGroup is OpenShift's cluster configuration API (ClusterVersion,
// Infrastructure, ...), which every OpenShift and OKD cluster serves and which a tenant
// cannot add: serving an API group takes a CRD or an APIService, cluster admins' objects.
const openShiftConfigGroup = "config.openshift.io"

// IsOpenShift reports whether the cluster is OpenShift: whether its API server serves
// config.openshift.io. It is the operator's one test of OpenShift.
func IsOpenShift(ctx context.Context, groups discovery.ServerGroupsInterfaceWithContext) (bool, error) {
	list, err := groups.ServerGroupsWithContext(ctx)
	if err != nil {
		return false, fmt.Errorf("list the API server's groups, to tell whether the cluster is OpenShift: %w", err)
	}
	return slices.ContainsFunc(list.Groups, func(group metav1.APIGroup) bool { return group.Name == openShiftConfigGroup }), nil
}

// Defaults are the namespaces discovery searches when the cluster admin names none:
// DefaultNamespaces on OpenShift only, and operatorNamespace, the operator's own, which
// only its installer controls ("" for none, outside a pod).
func Defaults(onOpenShift bool, operatorNamespace string) []string {
	var namespaces []string
	if onOpenShift {
		namespaces = slices.Clone(DefaultNamespaces)
	}
	if operatorNamespace != "" && !slices.Contains(namespaces, operatorNamespace) {
		namespaces = append(namespaces, operatorNamespace)
	}
	return namespaces
}

// Searched says, for a message, what discovery looks for in each namespace it searches.
const Searched = "Service thanos-querier (in openshift-monitoring only); monitoring.coreos.com/v1 Prometheus objects and their Service prometheus-operated or a Service selecting their pods; " +
	"Services prometheus-k8s (in monitoring only), prometheus-server, *-kube-prometheus-prometheus and Services labelled app.kubernetes.io/name=prometheus"

// SearchedIn says, for a message, what discovery looks for and in which namespaces.
func SearchedIn(namespaces []string) string {
	searched := searchableNamespaces(namespaces)
	if len(searched) == 0 {
		return "nothing: no namespace is configured for Prometheus discovery"
	}
	return Searched + ", in namespaces " + strings.Join(searched, ", ")
}

// PrometheusGVK is the Prometheus Operator's Prometheus kind.
var PrometheusGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"}

// Find returns the first endpoint found in namespaces, or nil, and the places in them the
// operator was not allowed to look, for a message. In order of preference: OpenShift's
// thanos-querier (only when openshift-monitoring is listed), a Prometheus Operator's
// Prometheus, then well-known Services; among equals, the earlier namespace in namespaces
// wins. reader reads Services and Prometheus objects (uncached: the operator caches
// neither), one namespace at a time: whatever is found may receive a scheduler's token,
// so nothing outside namespaces is ever considered. A namespace that does not exist holds
// nothing; one the operator may not read is skipped and reported.
func Find(ctx context.Context, reader client.Reader, namespaces []string) (*Endpoint, []string, error) {
	s := &search{reader: reader, namespaces: searchableNamespaces(namespaces), services: map[string][]corev1.Service{}}
	if slices.Contains(s.namespaces, openShiftMonitoring) {
		thanos := &corev1.Service{}
		err := reader.Get(ctx, client.ObjectKey{Namespace: openShiftMonitoring, Name: "thanos-querier"}, thanos)
		switch {
		case err == nil:
			return &Endpoint{URL: serviceURL(thanos, "https"), Source: "Service openshift-monitoring/thanos-querier (OpenShift monitoring)", NeedsToken: true}, nil, nil
		case apierrors.IsForbidden(err):
			s.unsearched = append(s.unsearched, "Service openshift-monitoring/thanos-querier")
		case !apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("read Service openshift-monitoring/thanos-querier: %w", err)
		}
	}
	endpoint, err := s.findOperated(ctx)
	if endpoint != nil || err != nil {
		return endpoint, s.unsearched, err
	}
	endpoint, err = s.findWellKnown(ctx)
	return endpoint, s.unsearched, err
}

// FindOperated returns the first Prometheus Operator Prometheus in namespaces with a
// Service in front of it, or nil, for installing recording rules when the user gave the
// address. Namespaces the operator may not read are skipped.
func FindOperated(ctx context.Context, reader client.Reader, namespaces []string) (*Endpoint, error) {
	s := &search{reader: reader, namespaces: searchableNamespaces(namespaces), services: map[string][]corev1.Service{}}
	return s.findOperated(ctx)
}

// searchableNamespaces are namespaces without duplicates, in their order, and without the
// empty name, which to the API means every namespace.
func searchableNamespaces(namespaces []string) []string {
	searchable := make([]string, 0, len(namespaces))
	for _, namespace := range namespaces {
		if namespace != "" && !slices.Contains(searchable, namespace) {
			searchable = append(searchable, namespace)
		}
	}
	return searchable
}

// search is one discovery run over a list of namespaces.
type search struct {
	reader     client.Reader
	namespaces []string
	// unsearched are the places the operator was not allowed to look.
	unsearched []string
	// services are the Services of each namespace listed so far, sorted by name; a
	// namespace the operator may not read has none.
	services map[string][]corev1.Service
}

// servicesIn lists the Services of namespace once per search.
func (s *search) servicesIn(ctx context.Context, namespace string) ([]corev1.Service, error) {
	if services, ok := s.services[namespace]; ok {
		return services, nil
	}
	list := &corev1.ServiceList{}
	err := s.reader.List(ctx, list, client.InNamespace(namespace))
	switch {
	case apierrors.IsForbidden(err):
		s.unsearched = append(s.unsearched, "Services in namespace "+namespace)
	case err != nil:
		return nil, fmt.Errorf("list Services in %s: %w", namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	s.services[namespace] = list.Items
	return list.Items, nil
}

// findWellKnown finds the Services of kube-prometheus and of common Helm charts.
func (s *search) findWellKnown(ctx context.Context) (*Endpoint, error) {
	for _, match := range []struct {
		matches func(*corev1.Service) bool
		what    string
	}{
		{func(svc *corev1.Service) bool { return svc.Namespace == "monitoring" && svc.Name == "prometheus-k8s" }, "kube-prometheus"},
		{func(svc *corev1.Service) bool { return svc.Name == "prometheus-server" }, "the Prometheus Helm chart"},
		{func(svc *corev1.Service) bool { return strings.HasSuffix(svc.Name, "-kube-prometheus-prometheus") }, "kube-prometheus-stack"},
		{func(svc *corev1.Service) bool { return svc.Labels["app.kubernetes.io/name"] == "prometheus" }, "label app.kubernetes.io/name=prometheus"},
	} {
		for _, namespace := range s.namespaces {
			services, err := s.servicesIn(ctx, namespace)
			if err != nil {
				return nil, err
			}
			for i := range services {
				if match.matches(&services[i]) {
					return wellKnown(&services[i], match.what), nil
				}
			}
		}
	}
	return nil, nil
}

// findOperated finds a Prometheus Operator's Prometheus and a Service in front of it.
func (s *search) findOperated(ctx context.Context) (*Endpoint, error) {
	for _, namespace := range s.namespaces {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(PrometheusGVK.GroupVersion().WithKind("PrometheusList"))
		err := s.reader.List(ctx, list, client.InNamespace(namespace))
		switch {
		case meta.IsNoMatchError(err) || IsMissingKind(err):
			return nil, nil // no Prometheus Operator in this cluster
		case apierrors.IsForbidden(err):
			s.unsearched = append(s.unsearched, "Prometheus objects in namespace "+namespace)
			continue
		case err != nil:
			return nil, fmt.Errorf("list Prometheus objects in %s: %w", namespace, err)
		}
		slices.SortFunc(list.Items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
		for i := range list.Items {
			operated, err := operatedPrometheus(&list.Items[i])
			if err != nil {
				return nil, err
			}
			services, err := s.servicesIn(ctx, namespace)
			if err != nil {
				return nil, err
			}
			source := fmt.Sprintf("Prometheus %s/%s (Prometheus Operator), Service ", operated.Namespace, operated.Name)
			if at := slices.IndexFunc(services, func(svc corev1.Service) bool { return svc.Name == "prometheus-operated" }); at >= 0 {
				return &Endpoint{URL: serviceURL(&services[at], "http"), Source: source + "prometheus-operated", Prometheus: operated}, nil
			}
			if service := selectingService(services, operated); service != nil {
				return &Endpoint{URL: serviceURL(service, "http"), Source: source + service.Name + " (selects its pods)", Prometheus: operated}, nil
			}
		}
	}
	return nil, nil
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

// selectingService is the first of services (those of prometheus's namespace) whose
// selector picks its pods, going by the labels the Prometheus Operator gives them.
func selectingService(services []corev1.Service, prometheus *OperatedPrometheus) *corev1.Service {
	podLabels := labels.Set{
		"app.kubernetes.io/name":       "prometheus",
		"app.kubernetes.io/instance":   prometheus.Name,
		"app.kubernetes.io/managed-by": "prometheus-operator",
		"prometheus":                   prometheus.Name,
		"operator.prometheus.io/name":  prometheus.Name,
	}
	for i := range services {
		selector := services[i].Spec.Selector
		if len(selector) > 0 && labels.SelectorFromSet(selector).Matches(podLabels) {
			return &services[i]
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
