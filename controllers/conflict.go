package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// schedulerNameConflict returns a problem when an older SecondaryScheduler claims cr's
// scheduler name: two schedulers binding the same pods would fight over them, so the
// older keeps the name and the newer waits until the older is gone.
func (r *SecondarySchedulerReconciler) schedulerNameConflict(ctx context.Context, cr *v1.SecondaryScheduler) (*schedconfig.Problem, error) {
	claimants, err := r.claimants(ctx, cr.EffectiveSchedulerName())
	if err != nil {
		return nil, err
	}
	for i := range claimants {
		other := &claimants[i]
		if other.UID != cr.UID && older(other, cr) {
			return &schedconfig.Problem{Reason: v1.ReasonSchedulerNameConflict, Message: fmt.Sprintf(
				"SecondaryScheduler %s/%s, created earlier, already runs scheduler %s; choose another spec.schedulerName (it cannot be changed later, so recreate this resource), or delete the other one",
				other.Namespace, other.Name, cr.EffectiveSchedulerName())}, nil
		}
	}
	return nil, nil
}

// claimants lists the SecondarySchedulers that claim schedulerName.
func (r *SecondarySchedulerReconciler) claimants(ctx context.Context, schedulerName string) ([]v1.SecondaryScheduler, error) {
	list := &v1.SecondarySchedulerList{}
	if err := r.List(ctx, list, client.MatchingFields{schedulerNameIndex: schedulerName}); err != nil {
		return nil, fmt.Errorf("list SecondarySchedulers named %s: %w", schedulerName, err)
	}
	return list.Items, nil
}

// older orders claimants by creation, then by namespace and name for a stable tie-break.
func older(a, b *v1.SecondaryScheduler) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}

// schedulerNameIndex indexes SecondarySchedulers by the scheduler name they claim.
const schedulerNameIndex = "schedulerName"

func indexSchedulerName(object client.Object) []string {
	return []string{object.(*v1.SecondaryScheduler).EffectiveSchedulerName()}
}

// otherClaimants wakes the other claimants of a scheduler name when one of them changes,
// so that a newer one takes over the name as soon as the older is gone.
func (r *SecondarySchedulerReconciler) otherClaimants(ctx context.Context, object client.Object) []reconcile.Request {
	cr := object.(*v1.SecondaryScheduler)
	claimants, err := r.claimants(ctx, cr.EffectiveSchedulerName())
	if err != nil {
		return nil
	}
	var requests []reconcile.Request
	for _, other := range claimants {
		if other.UID != cr.UID {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&other)})
		}
	}
	return requests
}
