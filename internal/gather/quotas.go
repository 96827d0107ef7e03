package gather

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// QuotaRefusal is why CapacityScheduling holds the unscheduled pod key (the oldest a
// scheduler enabling it keeps waiting), nil when no quota does: the pod is gone or placed,
// its namespace has no ElasticQuota, or the cluster serves none. It makes two requests,
// read-only: the pod, listed by name among the pods with no node (the operator lists no
// other pods), and the cluster's ElasticQuotas (a namespace borrows from all of them).
func (g *Gatherer) QuotaRefusal(ctx context.Context, key types.NamespacedName) (*pendingpods.QuotaRefusal, error) {
	var pods corev1.PodList
	unscheduled := fields.AndSelectors(fields.OneTermEqualSelector("metadata.name", key.Name),
		fields.OneTermEqualSelector("spec.nodeName", ""))
	if err := g.api.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingFieldsSelector{Selector: unscheduled}); err != nil {
		return nil, fmt.Errorf("read pending pod %s: %w", key, err)
	}
	if len(pods.Items) == 0 {
		return nil, nil
	}
	quotas, err := g.elasticQuotas(ctx)
	if err != nil {
		return nil, err
	}
	return pendingpods.RefusedByQuota(key.Namespace, pendingpods.PodRequest(&pods.Items[0]), quotas), nil
}

// elasticQuotas are the cluster's ElasticQuotas, none when it does not serve the kind, or
// when the operator may not list them (an installation from before it could, whose RBAC was
// not upgraded): the pod is then reported as the scheduler accounts for it, and status is
// still written, where an error would hold all of it back at every reconcile.
func (g *Gatherer) elasticQuotas(ctx context.Context) ([]pendingpods.ElasticQuota, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schedconfig.ElasticQuotas.GroupVersion().WithKind(schedconfig.ElasticQuotas.Kind + "List"))
	if err := g.api.List(ctx, list); meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %s: %w", schedconfig.ElasticQuotas.Resource, err)
	}
	quotas := make([]pendingpods.ElasticQuota, 0, len(list.Items))
	for _, item := range list.Items {
		var quota struct {
			Spec struct {
				Min corev1.ResourceList `json:"min"`
				Max corev1.ResourceList `json:"max"`
			} `json:"spec"`
			Status struct {
				Used corev1.ResourceList `json:"used"`
			} `json:"status"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &quota); err != nil {
			// The CRD's schema makes these quantities; one that is not holds nobody.
			continue
		}
		quotas = append(quotas, pendingpods.ElasticQuota{Namespace: item.GetNamespace(), Name: item.GetName(),
			Min: quota.Spec.Min, Max: quota.Spec.Max, Used: quota.Status.Used})
	}
	return quotas, nil
}
