package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// OrphanSweeper deletes what a SecondaryScheduler left outside its namespace when it
// went without its finalizer having run (someone removed the finalizer, or the resource
// went while no operator ran): its ClusterRoleBindings, its RoleBinding in kube-system
// and, once one of those proves it ran, its PrometheusRules, which no owner reference
// reaches and so no garbage collector deletes. Left in place, they would keep granting
// the scheduler's roles to a ServiceAccount name that whoever recreates it inherits, and
// keep a new SecondaryScheduler of the same name refused (ObjectNameTaken).
//
// Events alone wake it, never a timer: an object of those kinds created or changed (the
// cache's first listing counts, so every object is looked at once at start), and a
// SecondaryScheduler deleted. Each wakes the sweep of the namespace and name its owner
// labels give. A sweep reads the cache, which costs no request; only an object naming an
// owner UID the cache does not hold costs one: a read that asks the API server whether
// that SecondaryScheduler is really gone. The owner, rebuilt from the labels, must then
// prove the object its (ownership.OwnedBy) before it is deleted, with preconditions on its
// UID and resourceVersion. No Event is emitted: there is no resource left to attach it to.
type OrphanSweeper struct {
	// Client reads the cache and deletes.
	client.Client
	// APIReader tells whether an owner the cache does not hold is gone: the cache may not
	// hold yet a SecondaryScheduler created a moment ago.
	APIReader client.Reader
}

// SetupWithManager watches the operator's objects outside their owner's namespace and
// the deletions of SecondarySchedulers, from the manager's cache: no watch of its own.
func (r *OrphanSweeper) SetupWithManager(mgr ctrl.Manager) error {
	// A deleted object is no orphan any more.
	outsideOwnerNamespace := predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isOutsideOwnerNamespace(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return isOutsideOwnerNamespace(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return isOutsideOwnerNamespace(e.Object) },
	}
	deleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	controller := ctrl.NewControllerManagedBy(mgr).
		Named("orphans").
		Watches(&v1.SecondaryScheduler{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(deleted))
	for _, kind := range strayKinds {
		controller = controller.Watches(kind.object(), ownerOf, builder.WithPredicates(outsideOwnerNamespace))
	}
	return controller.Complete(r)
}

// isOutsideOwnerNamespace reports whether object, labelled with an owner, lies outside
// that owner's namespace, where no owner reference reaches.
func isOutsideOwnerNamespace(object client.Object) bool {
	namespace := object.GetLabels()[render.LabelOwnerNamespace]
	return namespace != "" && object.GetNamespace() != namespace
}

// strayKinds are the kinds of which a scheduler may have objects outside its namespace,
// as namespacesOf tells for a SecondaryScheduler whose namespace holds none of them (no
// namespace name contains ':').
var strayKinds = func() []childKind {
	elsewhere := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: ":"}}
	var kinds []childKind
	for _, kind := range allChildKinds {
		if slices.ContainsFunc(namespacesOf(elsewhere, kind), func(namespace string) bool { return namespace != elsewhere.Namespace }) {
			kinds = append(kinds, kind)
		}
	}
	return kinds
}()

// strayObject is an object outside its owner's namespace, and its kind.
type strayObject struct {
	kind   string
	object client.Object
}

// orphanRetry is how soon a sweep looks again at an object that changed between its
// read and its delete.
const orphanRetry = time.Second

// Reconcile deletes the objects outside the namespace of the SecondaryScheduler named by
// req that carry the owner labels of a SecondaryScheduler of that name no longer there.
func (r *OrphanSweeper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	orphans, err := r.findOrphans(ctx, req.NamespacedName)
	if err != nil || len(orphans) == 0 {
		return ctrl.Result{}, err
	}
	retry := false
	for _, uid := range slices.Sorted(maps.Keys(orphans)) {
		owner := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, UID: uid}}
		changed, err := r.sweep(ctx, owner, orphans[uid])
		if err != nil {
			return ctrl.Result{}, err
		}
		retry = retry || changed
	}
	if retry {
		return ctrl.Result{RequeueAfter: orphanRetry}, nil
	}
	return ctrl.Result{}, nil
}

// findOrphans returns the objects outside key's namespace labelled as a SecondaryScheduler
// of key's, by the owner UID they name, for the UIDs of SecondarySchedulers that are
// gone: neither the one the cache holds under key nor, asked only when the cache holds
// another or none, the one the API server holds.
func (r *OrphanSweeper) findOrphans(ctx context.Context, key types.NamespacedName) (map[types.UID][]strayObject, error) {
	stray, err := r.strayObjects(ctx, key)
	if err != nil || len(stray) == 0 {
		return nil, err
	}
	cached, err := ownerUID(ctx, r.Client, key, &v1.SecondaryScheduler{})
	if err != nil {
		return nil, err
	}
	byOwner := map[types.UID][]strayObject{}
	for _, object := range stray {
		// An object naming no UID cannot be proven anyone's (ownership.OwnedBy).
		if uid := types.UID(object.object.GetLabels()[render.LabelOwnerUID]); uid != "" && uid != cached {
			byOwner[uid] = append(byOwner[uid], object)
		}
	}
	if len(byOwner) == 0 {
		return nil, nil
	}
	metadata := &metav1.PartialObjectMetadata{}
	metadata.SetGroupVersionKind(v1.GroupVersion.WithKind("SecondaryScheduler"))
	live, err := ownerUID(ctx, r.APIReader, key, metadata)
	if err != nil {
		return nil, err
	}
	delete(byOwner, live)
	return byOwner, nil
}

// ownerUID reads the SecondaryScheduler at key into object with reader and returns its
// UID, "" when there is none.
func ownerUID(ctx context.Context, reader client.Reader, key types.NamespacedName, object client.Object) (types.UID, error) {
	if err := reader.Get(ctx, key, object); apierrors.IsNotFound(err) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("read SecondaryScheduler %s: %w", key, err)
	}
	return object.GetUID(), nil
}

// strayObjects lists from the cache the objects outside key's namespace that carry the
// owner labels of a SecondaryScheduler of key's, whatever its UID, where namespacesOf
// says a scheduler has some. Those in key's namespace carry an owner reference, and the
// garbage collector deletes them.
func (r *OrphanSweeper) strayObjects(ctx context.Context, key types.NamespacedName) ([]strayObject, error) {
	named := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	var found []strayObject
	for _, kind := range strayKinds {
		for _, namespace := range namespacesOf(named, kind) {
			if namespace == key.Namespace {
				continue
			}
			list := kind.list()
			options := []client.ListOption{ownership.NameIndex(named)}
			if namespace != "" {
				options = append(options, client.InNamespace(namespace))
			}
			if err := r.List(ctx, list, options...); err != nil {
				return nil, fmt.Errorf("list %ss labelled as %s's: %w", kind.name, key, err)
			}
			err := meta.EachListItem(list, func(item runtime.Object) error {
				// One being deleted already is on its way.
				if object := item.(client.Object); object.GetDeletionTimestamp().IsZero() {
					found = append(found, strayObject{kind: kind.name, object: object})
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return found, nil
}

// sweep deletes those of objects that are provably owner's and, when one is, those of
// owner's PrometheusRules that are, a few at a time. It reports whether one changed between its read and its
// delete, and is to be looked at again.
func (r *OrphanSweeper) sweep(ctx context.Context, owner *v1.SecondaryScheduler, objects []strayObject) (bool, error) {
	var rules []strayObject
	if slices.ContainsFunc(objects, func(stray strayObject) bool { return ownership.OwnedBy(stray.object, owner) }) {
		// Only what the operator rendered for owner tells that owner ran, and may have had
		// recording rules: labels anyone can write cost no request.
		var err error
		if rules, err = r.recordingRulesOf(ctx, owner); err != nil {
			return false, err
		}
	}
	var changed atomic.Bool
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(maxConcurrentDeletes)
	for _, stray := range slices.Concat(objects, rules) {
		group.Go(func() error {
			conflict, err := r.sweepOne(groupCtx, owner, stray)
			if conflict {
				changed.Store(true)
			}
			return err
		})
	}
	if err := group.Wait(); err != nil {
		return false, err
	}
	return changed.Load(), nil
}

// recordingRulesOf lists the PrometheusRules labelled as owner's, its UID included, from
// the API server: the cache holds none (they live in a Prometheus' namespace), and a
// cluster without the Prometheus Operator has none.
func (r *OrphanSweeper) recordingRulesOf(ctx context.Context, owner *v1.SecondaryScheduler) ([]strayObject, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(render.PrometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))
	if err := r.APIReader.List(ctx, list, ownership.OwnedBySelector(owner)); err != nil {
		if meta.IsNoMatchError(err) || promdiscovery.IsMissingKind(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list the PrometheusRules of %s (uid %s): %w", klog.KObj(owner), owner.UID, err)
	}
	rules := make([]strayObject, 0, len(list.Items))
	for i := range list.Items {
		rules = append(rules, strayObject{kind: render.PrometheusRuleGVK.Kind, object: &list.Items[i]})
	}
	return rules, nil
}

// sweepOne deletes stray if it is provably owner's, with preconditions on its UID and
// resourceVersion, so that what was proven is what goes: neither a same-named object
// created since nor this one changed since is deleted. It reports whether a
// precondition failed.
func (r *OrphanSweeper) sweepOne(ctx context.Context, owner *v1.SecondaryScheduler, stray strayObject) (bool, error) {
	log := logf.FromContext(ctx).WithValues("kind", stray.kind, "object", klog.KObj(stray.object),
		"owner", klog.KObj(owner), "ownerUID", owner.UID)
	if !ownership.OwnedBy(stray.object, owner) {
		log.V(1).Info("left in place: labelled as a deleted SecondaryScheduler's, but not as the operator renders it")
		return false, nil
	}
	uid, version := stray.object.GetUID(), stray.object.GetResourceVersion()
	err := r.Delete(ctx, stray.object, client.Preconditions{UID: &uid, ResourceVersion: &version},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("delete %s %s: %w", stray.kind, klog.KObj(stray.object), err)
	}
	log.Info("deleted an object of a deleted SecondaryScheduler whose finalizer did not run")
	return false, nil
}
