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

// credentials gives a scheduler that authenticates with a bound ServiceAccount token a
// token, when it has none or the one it has is due or no longer valid: it applies the
// ServiceAccount and its ClusterRoleBinding (already checked to be cr's), requests one
// token and keeps it in the token Secret at once, so that a failure further on does not
// cost another. It returns the scheduler rendered with the token. Without a bound token
// it returns rendered as it is.
func (r *SecondarySchedulerReconciler) credentials(ctx context.Context, cr *v1.SecondaryScheduler, found *gathered,
	rendered *render.Result) (*render.Result, *schedconfig.Problem, error) {
	identity := found.access.identity
	if identity == nil {
		return rendered, nil, nil
	}
	if identity.Token != nil {
		valid, err := r.tokenStillValid(ctx, cr, identity.Token)
		if err != nil || valid {
			return rendered, nil, err
		}
		identity.Token = nil
	}
	for _, object := range rendered.Objects {
		if render.IsMetricsIdentityObject(cr, object) {
			if problem, err := r.applyObject(ctx, object); problem != nil || err != nil {
				return nil, problem, err
			}
		}
	}
	token, problem, err := r.requestToken(ctx, cr, found.access.auth)
	if problem != nil || err != nil {
		return nil, problem, err
	}
	identity.Token = token
	found.facts.MetricsIdentity = identity
	rendered, problem = renderScheduler(cr, found.facts)
	if problem != nil {
		return nil, problem, nil
	}
	for _, object := range rendered.Objects {
		if render.IsMetricsTokenSecret(cr, object) {
			if problem, err := r.applyObject(ctx, object); problem != nil || err != nil {
				return nil, problem, err
			}
		}
	}
	return rendered, nil, nil
}

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
