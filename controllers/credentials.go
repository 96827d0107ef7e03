package controllers

import (
	"context"

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
	identity.Token = token // found.facts.MetricsIdentity is this identity
	rendered, problem = renderScheduler(cr, found)
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
