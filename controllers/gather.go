package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
)

// gatherer is the reconciler's gather stage, made once from its readers: the cache, the
// API reader, the REST mapper and the version endpoint, and the admin's choices. It is
// given no writer.
type gatherer struct {
	once     sync.Once
	gatherer *gather.Gatherer
}

func (r *SecondarySchedulerReconciler) gatherStage() *gather.Gatherer {
	r.gather.once.Do(func() {
		r.gather.gatherer = gather.New(gather.Config{
			Cache: r.Client, API: r.APIReader, Mapper: r.RESTMapper(), Version: r.Version,
			Tenancy: r.Tenancy, PrometheusNamespaces: r.PrometheusNamespaces, MetricsTokenClusterRoles: r.MetricsTokenClusterRoles,
			DiscoveryInterval: r.MetricsProber.Interval, Now: r.now,
		})
	})
	return r.gather.gatherer
}

// gatherFacts runs the gather stage on cr, then watches the objects of cr's spec it read,
// whether it refused or not: the change that fixes a refusal is often one of theirs.
func (r *SecondarySchedulerReconciler) gatherFacts(ctx context.Context, cr *v1.SecondaryScheduler) (*gather.Facts, error) {
	found, references, err := r.gatherStage().Gather(ctx, cr)
	owner := client.ObjectKeyFromObject(cr)
	for _, watch := range []struct {
		watches   referenceWatches
		reference gather.Reference
	}{{r.ConfigMapWatches, references.Config}, {r.SecretWatches, references.TokenSecret}, {r.CABundleWatches, references.CABundle}} {
		if watch.reference.Known {
			watch.watches.Reference(owner, watch.reference.Key)
		}
	}
	return found, err
}

// referenceWatches keep a watch on each object a SecondaryScheduler references
// (internal/refwatch).
type referenceWatches interface {
	Reference(owner types.NamespacedName, object *types.NamespacedName)
}
