package gather

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// PriorityClassGVK is the kind of PriorityClasses, of which the operator caches metadata
// only: whether one exists is all it needs to know.
var PriorityClassGVK = schedulingv1.SchemeGroupVersion.WithKind("PriorityClass")

// priorityClassName is the PriorityClass of cr's scheduler pods: spec.priorityClassName,
// which must exist (the API server refuses pods of a missing class, so the running
// scheduler is kept instead); else the default class the operator ships, when it exists,
// and none when it does not (the operator runs without its installer, as with make run).
func (g *Gatherer) priorityClassName(ctx context.Context, cr *v1.SecondaryScheduler) (string, error) {
	requested := cr.Spec.PriorityClassName
	name := RequestedPriorityClass(cr)
	class := &metav1.PartialObjectMetadata{}
	class.SetGroupVersionKind(PriorityClassGVK)
	err := g.cache.Get(ctx, client.ObjectKey{Name: name}, class)
	switch {
	case err == nil:
		return name, nil
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("read PriorityClass %s: %w", name, err)
	case requested != "":
		return "", refusal.New(v1.ReasonPriorityClassNotFound,
			"PriorityClass %s, named by spec.priorityClassName, does not exist, and the API server refuses pods of a missing class; "+
				"create it, or remove spec.priorityClassName to use the operator's default class %s", requested, v1.DefaultPriorityClassName)
	default:
		return "", nil
	}
}

// RequestedPriorityClass is the PriorityClass cr's scheduler pods ask for:
// spec.priorityClassName or the operator's default.
func RequestedPriorityClass(cr *v1.SecondaryScheduler) string {
	if cr.Spec.PriorityClassName != "" {
		return cr.Spec.PriorityClassName
	}
	return v1.DefaultPriorityClassName
}
