package controllers

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// checkSchedulerNames refuses cr when an older SecondaryScheduler claims one of
// names, the scheduler names cr's configuration serves: two schedulers binding the same
// pods would fight over them, so the older keeps the name and the newer waits until the
// older is gone. A name is claimed by a resource's spec, or by the profiles of its Custom
// configuration once the operator has read them (status.schedulerNames).
func (r *SecondarySchedulerReconciler) checkSchedulerNames(ctx context.Context, cr *v1.SecondaryScheduler, names []string) error {
	for _, name := range names {
		claimants, err := r.claimants(ctx, name)
		if err != nil {
			return err
		}
		for i := range claimants {
			other := &claimants[i]
			// A resource where no scheduler may run claims nothing: else it could hold
			// a name that a scheduler in an allowed namespace needs.
			if other.UID != cr.UID && older(other, cr) && r.Tenancy.Allows(other.Namespace) {
				return refusal.New(v1.ReasonSchedulerNameConflict,
					"SecondaryScheduler %s/%s, created earlier, already runs scheduler %s; scheduler names are cluster-wide "+
						"(pods in every namespace name one in spec.schedulerName), and the name defaults to metadata.name, so "+
						"resources of the same name in different namespaces conflict; choose another scheduler name "+
						"(spec.schedulerName cannot be changed, so recreate this resource; for a Custom configuration rename its profile), or delete the other one",
					other.Namespace, other.Name, name)
			}
		}
	}
	return nil
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

// schedulerNameIndex indexes SecondarySchedulers by the scheduler names they claim.
const schedulerNameIndex = "schedulerName"

func indexSchedulerName(object client.Object) []string {
	return claimedNames(object.(*v1.SecondaryScheduler))
}

// claimedNames are the scheduler names cr claims: the one its spec gives (spec.schedulerName,
// or metadata.name for the operator's own profiles), and those it published as served.
func claimedNames(cr *v1.SecondaryScheduler) []string {
	var names []string
	if cr.Spec.SchedulerName != "" || cr.EffectiveProfile() != v1.CustomProfile {
		names = append(names, cr.EffectiveSchedulerName())
	}
	for _, name := range cr.Status.SchedulerNames {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// otherClaimants wakes the other claimants of cr's scheduler names when cr is deleted or
// its claims change, so that a newer one takes over a name as soon as the older lets go,
// and a newer one that took a name an older one now claims steps back.
func (r *SecondarySchedulerReconciler) otherClaimants(ctx context.Context, object client.Object) []reconcile.Request {
	cr := object.(*v1.SecondaryScheduler)
	var requests []reconcile.Request
	for _, name := range claimedNames(cr) {
		claimants, err := r.claimants(ctx, name)
		if err != nil {
			return nil
		}
		for _, other := range claimants {
			request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&other)}
			if other.UID != cr.UID && !slices.Contains(requests, request) {
				requests = append(requests, request)
			}
		}
	}
	return requests
}
