package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// startMonitoringInstaller runs a MonitoringInstaller as the operator would at start, with
// the operator's RBAC and a RESTMapper made now (so that it knows the CRDs of this
// moment), and returns what Start returned.
func startMonitoringInstaller(t *testing.T, ctx context.Context) error {
	t.Helper()
	operator, err := client.New(operatorRESTConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(operatorRESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(operatorRESTConfig, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	installer := &MonitoringInstaller{Client: operator, Mapper: mapper, Namespace: operatorNamespace,
		SchedulerNamespaces: schedulerNamespaces, Labels: map[string]string{"release": "kube-prometheus-stack"}}
	return installer.Start(ctx)
}

// Without the Prometheus Operator's API the operator applies nothing and carries on; with
// it, it applies the ServiceMonitors and the PrometheusRule of the alerts in its own
// namespace, with its shipped RBAC, labelled for the Prometheus's selectors, and applies
// them again unchanged at its next start. The schedulers' ServiceMonitor selects in the
// namespaces where schedulers run, never in every namespace.
func TestMonitoringObjectsAppliedWhenTheAPIExists(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serviceMonitorCRD := promtest.OperatorCRD("ServiceMonitor", "servicemonitors", "servicemonitor")
	if err := adminClient.Get(ctx, client.ObjectKeyFromObject(serviceMonitorCRD), &apiextensionsv1.CustomResourceDefinition{}); err == nil {
		t.Fatal("the ServiceMonitor CRD exists already: this test installs it")
	}
	// The API absent: Start returns (nothing is retried), having applied no ServiceMonitor.
	g.Expect(startMonitoringInstaller(t, ctx)).To(Succeed())
	g.Expect(ctx.Err()).NotTo(HaveOccurred())

	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{serviceMonitorCRD, promtest.OperatorCRD("PrometheusRule", "prometheusrules", "prometheusrule")} {
		if err := adminClient.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	want, err := render.MonitoringObjects(operatorNamespace, schedulerNamespaces, map[string]string{"release": "kube-prometheus-stack"})
	g.Expect(err).NotTo(HaveOccurred())
	// Until the API server serves the new kinds, the installer may find them missing.
	g.Eventually(func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(render.ServiceMonitorGVK.GroupVersion().WithKind("ServiceMonitorList"))
		return adminClient.List(ctx, list)
	}, time.Minute).Should(Succeed())

	for range 2 { // the first start creates them, the next one finds them as it left them
		g.Expect(startMonitoringInstaller(t, ctx)).To(Succeed())
		for _, object := range want {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(object.GroupVersionKind())
			key := types.NamespacedName{Namespace: object.GetNamespace(), Name: object.GetName()}
			g.Expect(adminClient.Get(ctx, key, got)).To(Succeed(), "%s %s applied", object.GetKind(), key)
			g.Expect(got.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))
			g.Expect(got.GetLabels()).To(HaveKeyWithValue(render.LabelManagedBy, render.ManagedByValue))
			g.Expect(got.Object["spec"]).To(Equal(object.Object["spec"]), "%s %s as rendered", object.GetKind(), key)
		}
		schedulers := &unstructured.Unstructured{}
		schedulers.SetGroupVersionKind(render.ServiceMonitorGVK)
		g.Expect(adminClient.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: "secondary-schedulers"}, schedulers)).To(Succeed())
		selector, _, err := unstructured.NestedMap(schedulers.Object, "spec", "namespaceSelector")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(selector).To(Equal(map[string]any{"matchNames": stringsAsAny(slices.Sorted(slices.Values(schedulerNamespaces)))}),
			"the schedulers' ServiceMonitor selects exactly the scheduler namespaces")
	}
}

func stringsAsAny(items []string) []any {
	converted := make([]any, 0, len(items))
	for _, item := range items {
		converted = append(converted, item)
	}
	return converted
}
