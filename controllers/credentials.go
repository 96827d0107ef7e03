package controllers

import (
	"context"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// credentials gives a scheduler that authenticates with a bound ServiceAccount token a
// token, when it has none or the one it has is due or no longer valid: it applies the
// ServiceAccount and its ClusterRoleBinding (already checked to be cr's), requests one
// token and keeps it in the token Secret at once, so that a failure further on does not
// cost another. It returns the scheduler rendered with the token. Without a bound token
// it returns rendered as it is.
func (r *SecondarySchedulerReconciler) credentials(ctx context.Context, cr *v1.SecondaryScheduler, found *gathered,
	rendered *render.Result) (*render.Result, error) {
	identity := found.access.identity
	if identity == nil {
		return rendered, nil
	}
	if identity.Token != nil {
		valid, err := r.tokenStillValid(ctx, cr, identity.Token)
		if err != nil || valid {
			return rendered, err
		}
		identity.Token = nil
	}
	for _, object := range rendered.Objects {
		if render.IsMetricsIdentityObject(cr, object) {
			if err := r.applyObject(ctx, object); err != nil {
				return nil, err
			}
		}
	}
	token, err := r.requestToken(ctx, cr, found.access.auth)
	if err != nil {
		return nil, err
	}
	identity.Token = token // found.facts.MetricsIdentity is this identity
	if rendered, err = renderScheduler(cr, found); err != nil {
		return nil, err
	}
	for _, object := range rendered.Objects {
		if render.IsMetricsTokenSecret(cr, object) {
			if err := r.applyObject(ctx, object); err != nil {
				return nil, err
			}
		}
	}
	return rendered, nil
}
