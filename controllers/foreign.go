package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// takenName returns a problem when an object the scheduler needs already exists under
// its name but is not cr's: server-side apply would silently take it over. The cache
// holds only the operator's objects, so a miss there is checked against the API server.
func (r *SecondarySchedulerReconciler) takenName(ctx context.Context, cr *v1.SecondaryScheduler, desired []*unstructured.Unstructured) (*schedconfig.Problem, error) {
	for _, object := range desired {
		key := client.ObjectKeyFromObject(object)
		var existing client.Object
		// Typed, so that the read is served by the cache; kinds outside the scheme (the
		// Prometheus Operator's) are not cached and are read as metadata.
		if typed, err := r.Scheme().New(object.GroupVersionKind()); err == nil {
			existing = typed.(client.Object)
			err = r.Get(ctx, key, existing)
			if err == nil && ownedBy(existing, cr) {
				continue
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("read %s %s: %w", object.GetKind(), key, err)
			}
		} else {
			metadata := &metav1.PartialObjectMetadata{}
			metadata.SetGroupVersionKind(object.GroupVersionKind())
			existing = metadata
		}
		if err := r.APIReader.Get(ctx, key, existing); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", object.GetKind(), key, err)
		}
		if !ownedBy(existing, cr) {
			return &schedconfig.Problem{Reason: v1.ReasonObjectNameTaken, Message: fmt.Sprintf(
				"%s %s already exists and does not belong to this SecondaryScheduler; the operator will not take it over. Delete or rename it, or give this SecondaryScheduler another name",
				object.GetKind(), key)}, nil
		}
	}
	return nil, nil
}

func ownedBy(object client.Object, cr *v1.SecondaryScheduler) bool {
	labels := object.GetLabels()
	return labels[render.LabelOwnerNamespace] == cr.Namespace && labels[render.LabelOwnerName] == cr.Name
}
