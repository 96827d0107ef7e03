package controllers

// The read stages of a reconcile as the reconciler runs them: made at once, by the
// reconciler's constructor, from its readers (internal/gather, internal/ownership,
// internal/observe hold nothing else), and what the controller does around each: keeping
// the watches that gathering declares, adding the finalizer (the writer's) while
// ownership is checked, deriving Available from what was observed.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// readStages are the stages of a reconcile that only read: gathering every fact
// (internal/gather), the ownership check (internal/ownership) and observing what runs
// (internal/observe). newReadStages makes them, at once, from readers and the admin's
// choices alone; none of them holds or is given a writer (TestReadStagesGetNoWriter,
// and each package's own proof with internal/readonly/readonlytest).
type readStages struct {
	gather    *gather.Gatherer
	ownership *ownership.Checker
	observe   *observe.Observer
}

// newReadStages makes the read stages from config's readers (the cache, the API reader,
// the REST mapper and the version endpoint) and choices, and scheme, which the ownership
// check tells objects' kinds by.
func newReadStages(config gather.Config, scheme *runtime.Scheme) readStages {
	return readStages{
		gather:    gather.New(config),
		ownership: ownership.NewChecker(config.Cache, config.API, scheme),
		observe:   observe.New(config.Cache, config.Now),
	}
}

// gatherFacts runs the gather stage on cr, then watches the objects of cr's spec it read,
// whether it refused or not: the change that fixes a refusal is often one of theirs.
func (r *SecondarySchedulerReconciler) gatherFacts(ctx context.Context, cr *v1.SecondaryScheduler) (*gather.Facts, error) {
	found, references, err := r.read.gather.Gather(ctx, cr)
	owner := client.ObjectKeyFromObject(cr)
	for _, watch := range r.references {
		if referenced := watch.referenced(references); referenced.Known {
			watch.watches.ReferenceAll(owner, referenced.Keys)
		}
	}
	return found, err
}

// checkOwnershipAndAddFinalizer runs the ownership check (internal/ownership) while it
// starts adding the finalizer to cr, when cr lacks it. The finalizer is patched onto a
// copy, so that the check, and the writes after it, read a cr that does not change under
// them; cr takes the patch's finalizers and resourceVersion when it is awaited
// (finalizerPatch.wait). When the check passes, the patch is returned still running: the
// writes that need the finalizer await it (applyIfChanged), those that do not go on beside
// it, which spares a new scheduler a round trip on its way to running. When the check
// refuses or fails, the patch is awaited first: cr takes its result whatever the check
// says.
func (r *SecondarySchedulerReconciler) checkOwnershipAndAddFinalizer(ctx context.Context, cr *v1.SecondaryScheduler,
	desired []*unstructured.Unstructured) (ownership.Live, *finalizerPatch, error) {
	if controllerutil.ContainsFinalizer(cr, Finalizer) {
		live, err := r.read.ownership.Check(ctx, cr, desired)
		return live, nil, err
	}
	patch := r.write.startAddingFinalizer(ctx, cr)
	live, err := r.read.ownership.Check(ctx, cr, desired)
	if err != nil {
		if patchErr := patch.wait(cr); patchErr != nil && refusal.Is(err) {
			return nil, nil, patchErr
		}
		return nil, nil, err
	}
	return live, patch, nil
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
	seen, err := r.read.observe.Scheduler(ctx, cr, applied)
	if err != nil {
		return report.Availability{}, err
	}
	return report.Available(cr, status, conditions, seen), nil
}
