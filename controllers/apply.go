package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// apply applies every object of the rendered scheduler with server-side apply, then
// deletes cr's objects that are no longer rendered. A refusal of the API server for the
// object's content is the user's to fix and returned as a problem.
func (r *SecondarySchedulerReconciler) apply(ctx context.Context, cr *v1.SecondaryScheduler, found *gathered, rendered *render.Result) (*schedconfig.Problem, error) {
	for _, object := range rendered.Objects {
		if problem, err := r.applyObject(ctx, object); problem != nil || err != nil {
			return problem, err
		}
	}
	if err := r.pruneChildren(ctx, cr, rendered.Objects); err != nil {
		return nil, err
	}
	if found.recordingRules(cr) != "" || cr.Status.Metrics != nil && cr.Status.Metrics.RecordingRules != "" {
		return nil, r.pruneRecordingRules(ctx, cr, rendered.Objects)
	}
	return nil, nil
}

// applyObject applies one object as the operator's field owner.
func (r *SecondarySchedulerReconciler) applyObject(ctx context.Context, object *unstructured.Unstructured) (*schedconfig.Problem, error) {
	key := client.ObjectKeyFromObject(object)
	err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(FieldOwner), client.ForceOwnership)
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsConflict(err):
		// A precondition failed (the kept metrics token changed since it was read):
		// nothing is wrong, the next reconcile reads it anew.
		return nil, fmt.Errorf("apply %s %s: changed meanwhile: %w", object.GetKind(), key, err)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err):
		return &schedconfig.Problem{Reason: v1.ReasonApplyFailed, Message: fmt.Sprintf(
			"the API server refused %s %s: %s; if it is a permission, a cluster admin grants it (docs/security.md), otherwise correct the field it names",
			object.GetKind(), key, apiErrorSummary(err))}, nil
	default:
		return nil, fmt.Errorf("apply %s %s: %w", object.GetKind(), key, err)
	}
}
