package controllers

// The stages of a reconcile as the reconciler runs them: each made once from the
// reconciler's readers (internal/gather, internal/ownership, internal/observe hold
// nothing else), and what the controller does around each: keeping the watches that
// gathering declares, adding the finalizer while ownership is checked, deriving
// Available from what was observed.

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/statusapply"
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
	for _, watch := range []struct {
		watches   referenceSetWatches
		reference gather.ReferenceSet
	}{{r.ExtenderSecretWatches, references.ExtenderSecrets}, {r.ExtenderConfigMapWatches, references.ExtenderConfigMaps}} {
		if watch.reference.Known {
			watch.watches.ReferenceAll(owner, watch.reference.Keys)
		}
	}
	return found, err
}

// referenceSetWatches keep a watch on each of the objects a SecondaryScheduler
// references of one kind (internal/refwatch).
type referenceSetWatches interface {
	ReferenceAll(owner types.NamespacedName, objects []types.NamespacedName)
}

// referenceWatches keep a watch on each object a SecondaryScheduler references
// (internal/refwatch).
type referenceWatches interface {
	Reference(owner types.NamespacedName, object *types.NamespacedName)
}

// checkOwnershipAndAddFinalizer runs the ownership check (internal/ownership) while it adds the finalizer to cr,
// when cr lacks it: the finalizer must be there before anything is created, and doing
// both at once spares a new scheduler a round trip on its way to running. The finalizer
// is patched onto a copy, whose finalizers and resourceVersion cr takes once both are
// done, so that the check reads a cr that does not change under it.
func (r *SecondarySchedulerReconciler) checkOwnershipAndAddFinalizer(ctx context.Context, cr *v1.SecondaryScheduler,
	desired []*unstructured.Unstructured) (ownership.Live, error) {
	if controllerutil.ContainsFinalizer(cr, Finalizer) {
		return r.ownershipStage().Check(ctx, cr, desired)
	}
	withFinalizer := cr.DeepCopy()
	var live ownership.Live
	var refused error
	group, groupCtx := errgroup.WithContext(ctx)
	group.Go(func() error {
		if err := addFinalizer(groupCtx, r.Client, withFinalizer, Finalizer); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		return nil
	})
	group.Go(func() error {
		var err error
		live, err = r.ownershipStage().Check(groupCtx, cr, desired)
		if refusal.Is(err) {
			// The finalizer patch goes on: cr must take its result whatever the check says.
			refused, err = err, nil
		}
		return err
	})
	if err := group.Wait(); err != nil {
		return nil, err
	}
	cr.Finalizers, cr.ResourceVersion = withFinalizer.Finalizers, withFinalizer.ResourceVersion
	return live, refused
}

// ownershipStage is the ownership check, made once from the reconciler's readers.
func (r *SecondarySchedulerReconciler) ownershipStage() *ownership.Checker {
	r.ownership.once.Do(func() {
		r.ownership.checker = ownership.NewChecker(r.Client, r.APIReader, r.Scheme())
	})
	return r.ownership.checker
}

// ownershipChecker holds the ownership stage.
type ownershipChecker struct {
	once    sync.Once
	checker *ownership.Checker
}

// observeScheduler looks at the scheduler (internal/observe) and sets readyReplicas and
// Available: True only when a ready pod runs the Deployment's current pod template (its
// configuration hash and CA bundle) and holds the Lease. A ready pod of an older
// configuration does not count, nor does one of the current configuration while an older
// one leads: the leader schedules, but not as the resource now says. So Available, and
// kubectl wait on it, mean that pods are placed as the generation asks. When no pod of
// the current template is ready, their state says why if it can. applied is the
// Deployment as this reconcile applied or found it, nil when it applied none.
func (r *SecondarySchedulerReconciler) observeScheduler(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions, applied *appsv1.Deployment) (report.Availability, error) {
	seen, err := r.observeStage().Scheduler(ctx, cr, applied)
	if err != nil {
		return report.Availability{}, err
	}
	return report.Available(cr, status, conditions, seen), nil
}

// observer holds the observe stage.
type observer struct {
	once     sync.Once
	observer *observe.Observer
}

// observeStage is the observe stage, made once from the reconciler's cache.
func (r *SecondarySchedulerReconciler) observeStage() *observe.Observer {
	r.observe.once.Do(func() { r.observe.observer = observe.New(r.Client, r.now) })
	return r.observe.observer
}

// statusWriter is the reconciler's last stage, which writes status (internal/statusapply).
type statusWriter struct {
	once   sync.Once
	writer *statusapply.Writer
}

// statusStage is the status stage, made once with the reconciler's client.
func (r *SecondarySchedulerReconciler) statusStage() *statusapply.Writer {
	r.status.once.Do(func() { r.status.writer = statusapply.NewWriter(r.Client, FieldOwner) })
	return r.status.writer
}
