package gather

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// quotaReader answers the two lists of QuotaRefusal: the pending pod, and the
// ElasticQuotas, or quotasErr in their place.
type quotaReader struct {
	client.Reader
	quotas    []unstructured.Unstructured
	quotasErr error
}

func (r quotaReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch list := list.(type) {
	case *corev1.PodList:
		list.Items = []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "big"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}}
		return nil
	case *unstructured.UnstructuredList:
		if r.quotasErr != nil {
			return r.quotasErr
		}
		list.Items = r.quotas
		return nil
	}
	return errors.New("unexpected list")
}

// TestQuotaRefusal checks that the quota a pending pod would pass is found from the
// cluster's ElasticQuotas, and that quotas the operator may not list, or that the cluster
// does not serve, explain nothing instead of failing the reconcile.
func TestQuotaRefusal(t *testing.T) {
	quota := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
		"metadata": map[string]any{"namespace": "team", "name": "quota"},
		"spec":     map[string]any{"min": map[string]any{"cpu": "2"}, "max": map[string]any{"cpu": "2"}},
		"status":   map[string]any{"used": map[string]any{"cpu": "1500m"}},
	}}
	elasticQuotas := schema.GroupResource{Group: "scheduling.x-k8s.io", Resource: "elasticquotas"}
	tests := []struct {
		name    string
		reader  quotaReader
		refused bool
	}{
		{"beyond its max", quotaReader{quotas: []unstructured.Unstructured{quota}}, true},
		{"no quota", quotaReader{}, false},
		{"not allowed to list them", quotaReader{quotasErr: apierrors.NewForbidden(elasticQuotas, "", errors.New("RBAC"))}, false},
		{"not served", quotaReader{quotasErr: apierrors.NewNotFound(elasticQuotas, "")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gatherer := New(Config{Cache: tt.reader, API: tt.reader})
			got, err := gatherer.QuotaRefusal(context.Background(), types.NamespacedName{Namespace: "team", Name: "big"})
			if err != nil || (got != nil) != tt.refused {
				t.Fatalf("QuotaRefusal = %+v, %v; want refused %t", got, err, tt.refused)
			}
		})
	}
	failing := quotaReader{quotasErr: apierrors.NewServiceUnavailable("etcd")}
	if _, err := New(Config{Cache: failing, API: failing}).QuotaRefusal(context.Background(), types.NamespacedName{Namespace: "team", Name: "big"}); err == nil {
		t.Fatal("a failure to list the quotas is not reported")
	}
}
