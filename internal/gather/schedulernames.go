package gather

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// checkSchedulerNames refuses cr when an older SecondaryScheduler claims one of names,
// the scheduler names cr's configuration serves: two schedulers binding the same pods
// would fight over them, so the older keeps the name and the newer waits until the older
// is gone. A name is claimed by a resource's spec, or by the profiles of its Custom
// configuration once the operator has read them (status.schedulerNames).
func (g *Gatherer) checkSchedulerNames(ctx context.Context, cr *v1.SecondaryScheduler, names []string) error {
	for _, name := range names {
		claimants, err := Claimants(ctx, g.cache, name)
		if err != nil {
			return err
		}
		for i := range claimants {
			other := &claimants[i]
			// A resource where no scheduler may run claims nothing: else it could hold
			// a name that a scheduler in an allowed namespace needs.
			if other.UID != cr.UID && older(other, cr) && g.tenancy.Allows(other.Namespace) {
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

// Claimants lists, through reader (a cache with SchedulerNameIndex), the
// SecondarySchedulers that claim schedulerName.
func Claimants(ctx context.Context, reader client.Reader, schedulerName string) ([]v1.SecondaryScheduler, error) {
	list := &v1.SecondarySchedulerList{}
	if err := reader.List(ctx, list, client.MatchingFields{SchedulerNameIndex: schedulerName}); err != nil {
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

// SchedulerNameIndex indexes SecondarySchedulers by the scheduler names they claim
// (IndexSchedulerName): the controller registers it with its cache.
const SchedulerNameIndex = "schedulerName"

// IndexSchedulerName is the index function of SchedulerNameIndex.
func IndexSchedulerName(object client.Object) []string {
	return ClaimedNames(object.(*v1.SecondaryScheduler))
}

// ClaimedNames are the scheduler names cr claims: the one its spec gives
// (spec.schedulerName, or metadata.name for the operator's own profiles), and those it
// published as served.
func ClaimedNames(cr *v1.SecondaryScheduler) []string {
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
