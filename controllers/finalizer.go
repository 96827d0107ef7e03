package controllers

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// addFinalizer and removeFinalizer change object's finalizers with a merge patch that
// carries object's resourceVersion. A JSON merge patch replaces the whole list, so one
// written from a stale read would drop a finalizer another controller added meanwhile;
// with the resourceVersion the API server refuses it instead (409 Conflict), and the
// resource is read again (requeueOnConflict).
func addFinalizer(ctx context.Context, c client.Client, object client.Object, finalizer string) error {
	return patchFinalizers(ctx, c, object, func() bool { return controllerutil.AddFinalizer(object, finalizer) })
}

func removeFinalizer(ctx context.Context, c client.Client, object client.Object, finalizer string) error {
	return patchFinalizers(ctx, c, object, func() bool { return controllerutil.RemoveFinalizer(object, finalizer) })
}

func patchFinalizers(ctx context.Context, c client.Client, object client.Object, change func() bool) error {
	patch := client.MergeFromWithOptions(object.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	if !change() {
		return nil
	}
	return c.Patch(ctx, object, patch)
}

// isSecondarySchedulerConflict reports whether err is the API server's refusal of a
// write to a SecondaryScheduler that changed since it was read.
func isSecondarySchedulerConflict(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	return details != nil && details.Group == v1.GroupVersion.Group && details.Kind == "secondaryschedulers"
}
