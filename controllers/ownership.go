package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// checkOwnership refuses cr when an object the scheduler needs already exists
// under its name but is not provably cr's: server-side apply would silently take it
// over. It runs after rendering and before anything is applied or a token requested. The
// cache holds only the operator's objects, so a miss there is checked against the API
// server; the objects are looked at concurrently, since a new scheduler misses them all.
// It returns the objects the cache holds as cr's, which apply compares with what it
// would write.
func (r *SecondarySchedulerReconciler) checkOwnership(ctx context.Context, cr *v1.SecondaryScheduler,
	desired []*unstructured.Unstructured) (liveObjects, error) {
	live := make([]client.Object, len(desired))
	refusals := make([]error, len(desired))
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(maxConcurrentReads)
	for i, object := range desired {
		group.Go(func() error {
			var err error
			live[i], err = r.checkOwnershipOf(groupCtx, cr, object)
			if refusal.Is(err) {
				refusals[i] = err // every name is still looked at: a transient error comes first
				return nil
			}
			return err
		})
	}
	if err := group.Wait(); err != nil {
		return nil, err
	}
	found := liveObjects{}
	for i, object := range desired {
		if refusals[i] != nil {
			return nil, refusals[i]
		}
		if live[i] != nil {
			found[objectID(object)] = live[i]
		}
	}
	return found, nil
}

// maxConcurrentReads bounds the reads of the ownership check in flight at once: a new
// scheduler misses all of its dozen objects in the cache and asks the API server for
// each, beside the reconciles of other schedulers.
const maxConcurrentReads = 8

// checkOwnershipAndAddFinalizer runs checkOwnership while it adds the finalizer to cr,
// when cr lacks it: the finalizer must be there before anything is created, and doing
// both at once spares a new scheduler a round trip on its way to running. The finalizer
// is patched onto a copy, whose finalizers and resourceVersion cr takes once both are
// done, so that the check reads a cr that does not change under it.
func (r *SecondarySchedulerReconciler) checkOwnershipAndAddFinalizer(ctx context.Context, cr *v1.SecondaryScheduler,
	desired []*unstructured.Unstructured) (liveObjects, error) {
	if controllerutil.ContainsFinalizer(cr, Finalizer) {
		return r.checkOwnership(ctx, cr, desired)
	}
	withFinalizer := cr.DeepCopy()
	var live liveObjects
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
		live, err = r.checkOwnership(groupCtx, cr, desired)
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

// liveObjects are cr's objects as the cache holds them, by objectID.
type liveObjects map[string]client.Object

// objectID names an object among a scheduler's: its kind, namespace and name.
func objectID(object client.Object) string {
	return kindOf(object) + "/" + object.GetNamespace() + "/" + object.GetName()
}

// checkOwnershipOf checks one object of the scheduler: it returns the cached object
// when the cache holds it as cr's, a refusal when someone else's has its name.
func (r *SecondarySchedulerReconciler) checkOwnershipOf(ctx context.Context, cr *v1.SecondaryScheduler,
	object *unstructured.Unstructured) (client.Object, error) {
	key := client.ObjectKeyFromObject(object)
	var existing client.Object
	// Typed, so that the read is served by the cache; kinds outside the scheme (the
	// Prometheus Operator's) are not cached and are read as metadata.
	if typed, err := r.Scheme().New(object.GroupVersionKind()); err == nil {
		existing = typed.(client.Object)
		err = r.Get(ctx, key, existing)
		if err == nil && ownedBy(existing, cr) {
			return existing, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read %s %s: %w", object.GetKind(), key, err)
		}
	} else {
		metadata := &metav1.PartialObjectMetadata{}
		metadata.SetGroupVersionKind(object.GroupVersionKind())
		existing = metadata
	}
	if err := r.APIReader.Get(ctx, key, existing); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", object.GetKind(), key, err)
	}
	if !ownedBy(existing, cr) {
		return nil, refusal.New(v1.ReasonObjectNameTaken,
			"%s %s already exists and does not belong to this SecondaryScheduler (uid %s)%s; the operator will not take it over, change it or delete it. "+
				"Delete or rename it, or give this SecondaryScheduler another name",
			object.GetKind(), strings.TrimPrefix(key.String(), "/"), cr.UID, bindingNote(existing))
	}
	return nil, nil
}

// ownedBy reports whether object is provably cr's: it carries cr's owner labels,
// including its UID (so that a SecondaryScheduler recreated under the same name does not
// inherit what its predecessor left), a namespaced object's controller reference, when it
// has one, is cr, and a binding is one the operator renders for cr, roleRef and subjects
// included: labels can be put on any binding by whoever may update it, and a binding that
// grants anything else is not the operator's to change or delete.
func ownedBy(object client.Object, cr *v1.SecondaryScheduler) bool {
	labels := object.GetLabels()
	if labels[render.LabelOwnerNamespace] != cr.Namespace || labels[render.LabelOwnerName] != cr.Name ||
		labels[render.LabelOwnerUID] != string(cr.UID) || cr.UID == "" {
		return false
	}
	if controller := metav1.GetControllerOfNoCopy(object); controller != nil && controller.UID != cr.UID {
		return false
	}
	if binding, ok := bindingOf(object); ok {
		rendered, err := render.IsRenderedBinding(cr, binding)
		return err == nil && rendered
	}
	return true
}

// bindingOf reads a RoleBinding or ClusterRoleBinding for render.IsRenderedBinding.
func bindingOf(object client.Object) (render.Binding, bool) {
	switch binding := object.(type) {
	case *rbacv1.RoleBinding:
		return render.Binding{Kind: "RoleBinding", Namespace: binding.Namespace, Name: binding.Name, RoleRef: binding.RoleRef, Subjects: binding.Subjects}, true
	case *rbacv1.ClusterRoleBinding:
		return render.Binding{Kind: "ClusterRoleBinding", Name: binding.Name, RoleRef: binding.RoleRef, Subjects: binding.Subjects}, true
	}
	return render.Binding{}, false
}

// bindingNote says, for a binding, what besides labels makes it the operator's.
func bindingNote(object client.Object) string {
	if _, ok := bindingOf(object); ok {
		return " (a binding is the operator's only with its owner labels and the roleRef and subjects the operator renders)"
	}
	return ""
}

// ownedBySelector selects the objects whose labels make them cr's (ownedBy's label check),
// for a request the API server answers by label: kept beside ownedBy so that both stay
// the same proof.
func ownedBySelector(cr *v1.SecondaryScheduler) client.MatchingLabels {
	return client.MatchingLabels{render.LabelOwnerNamespace: cr.Namespace, render.LabelOwnerName: cr.Name, render.LabelOwnerUID: string(cr.UID)}
}

// deleteOwned deletes object if, and only if, it is cr's, with a precondition on its UID
// so that an object replaced meanwhile by someone else's of the same name survives.
func deleteOwned(ctx context.Context, c client.Client, cr *v1.SecondaryScheduler, object client.Object) error {
	if !ownedBy(object, cr) {
		return nil
	}
	uid := object.GetUID()
	err := c.Delete(ctx, object, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s: %w", kindOf(object), client.ObjectKeyFromObject(object), err)
	}
	return nil
}

func kindOf(object client.Object) string {
	if kind := object.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	return fmt.Sprintf("%T", object)
}

// nameTakenRetry is when a name taken by someone else's object is looked at again: no
// event tells when it goes away, so it is polled, backing off from 3 s to 5 minutes as
// the problem lasts.
func nameTakenRetry(status *v1.SecondarySchedulerStatus, now time.Time) time.Duration {
	condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionDegraded))
	if condition == nil || condition.Reason != string(v1.ReasonObjectNameTaken) || condition.Status != metav1.ConditionTrue {
		return 3 * time.Second
	}
	return min(max(now.Sub(condition.LastTransitionTime.Time), 3*time.Second), 5*time.Minute)
}
