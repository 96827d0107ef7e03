package controllers

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// priorityClassGVK is the kind of PriorityClasses, of which the operator caches metadata
// only: whether one exists is all it needs to know.
var priorityClassGVK = schedulingv1.SchemeGroupVersion.WithKind("PriorityClass")

// priorityClassName is the PriorityClass of cr's scheduler pods: spec.priorityClassName,
// which must exist (the API server refuses pods of a missing class, so the running
// scheduler is kept instead); else the default class the operator ships, when it exists,
// and none when it does not (the operator runs without its installer, as with make run).
func (r *SecondarySchedulerReconciler) priorityClassName(ctx context.Context, cr *v1.SecondaryScheduler) (string, error) {
	requested := cr.Spec.PriorityClassName
	name := requestedPriorityClass(cr)
	class := &metav1.PartialObjectMetadata{}
	class.SetGroupVersionKind(priorityClassGVK)
	err := r.Get(ctx, client.ObjectKey{Name: name}, class)
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

// requestedPriorityClass is the PriorityClass cr's scheduler pods ask for: spec.priorityClassName
// or the operator's default.
func requestedPriorityClass(cr *v1.SecondaryScheduler) string {
	if cr.Spec.PriorityClassName != "" {
		return cr.Spec.PriorityClassName
	}
	return v1.DefaultPriorityClassName
}

// priorityClassUsers wakes the SecondarySchedulers whose pods ask for a PriorityClass
// that was created or deleted: one refused for want of it runs, and one using the
// default class renders with it or without it.
func (r *SecondarySchedulerReconciler) priorityClassUsers(ctx context.Context, class client.Object) []reconcile.Request {
	list := &v1.SecondarySchedulerList{}
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if requestedPriorityClass(&list.Items[i]) == class.GetName() {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}
