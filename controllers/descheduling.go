package controllers

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// errNoMutatingAdmission is why no scheduler-name policy can be in place on a cluster that
// does not serve MutatingAdmissionPolicy.
var errNoMutatingAdmission = errors.New("this cluster does not serve MutatingAdmissionPolicy v1 (Kubernetes 1.36 and later)")

// reportDescheduling reports the descheduler of spec.descheduling (report.Descheduling)
// from its Deployment as the cache holds it, and whether the scheduler-name policy it
// selects pods by is in place.
func (r *SecondarySchedulerReconciler) reportDescheduling(ctx context.Context, cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus,
	conditions *report.Conditions) error {
	var facts report.DeschedulingFacts
	if cr.Spec.Descheduling != nil {
		deployment := &appsv1.Deployment{}
		err := r.cache.Get(ctx, client.ObjectKey{Namespace: cr.Namespace, Name: render.DeschedulerName(cr)}, deployment)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("read the descheduler's Deployment: %w", err)
		default:
			facts.Deployment = deployment
		}
		if facts.PolicyProblem, err = r.schedulerNamePolicyProblem(ctx); err != nil {
			return err
		}
	}
	report.Descheduling(cr, status, conditions, facts)
	return nil
}

// schedulerNamePolicyProblem is why the scheduler-name policy is not in place as the
// installer ships it, nil when it is; the error is a failure to read it.
func (r *SecondarySchedulerReconciler) schedulerNamePolicyProblem(ctx context.Context) (problem, err error) {
	if r.routing == nil || !r.routing.Supported || r.routing.SchedulerNamePolicy == nil {
		return errNoMutatingAdmission, nil
	}
	_, err = r.routing.SchedulerNamePolicy.Check(ctx, r.cache)
	var notInPlace *admission.NotInPlaceError
	if errors.As(err, &notInPlace) {
		return err, nil
	}
	return nil, err
}

// everyDeschedulingSecondaryScheduler are the requests of every SecondaryScheduler with
// spec.descheduling, whose Descheduling condition says whether the scheduler-name policy
// is in place.
func (r *SecondarySchedulerReconciler) everyDeschedulingSecondaryScheduler(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.secondarySchedulersWhere(ctx, "a change of the scheduler-name policy", func(cr *v1.SecondaryScheduler) bool {
		return cr.Spec.Descheduling != nil
	})
}
