package controllers

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/drift"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// apply writes, with server-side apply, every object of the rendered scheduler that the
// cluster does not already hold as rendered, then deletes cr's objects that are no
// longer rendered. An object the cache holds with the hash of this very content and
// every field of it intact is left alone: a reconcile that changes nothing writes
// nothing. The objects are applied concurrently, in waves (applyWave): what is
// referenced before what references it. A refusal of the API server for the object's
// content is the user's to fix and returned as a refusal. It returns the scheduler's
// Deployment as it now is.
func (r *writer) apply(ctx context.Context, cr *v1.SecondaryScheduler, found *gather.Facts, rendered *render.Result,
	live ownership.Live) (*appsv1.Deployment, error) {
	var waves [applyWaves][]*unstructured.Unstructured
	var deployment *unstructured.Unstructured
	for _, object := range rendered.Objects {
		if object.GetKind() == "Deployment" {
			deployment = object
			continue
		}
		wave := applyWave(object)
		waves[wave] = append(waves[wave], object)
	}
	for _, wave := range waves {
		if err := r.applyAll(ctx, cr, wave, live); err != nil {
			return nil, err
		}
	}
	var applied *appsv1.Deployment
	if deployment != nil {
		var err error
		if applied, err = r.applyDeployment(ctx, cr, deployment, live); err != nil {
			return nil, err
		}
	}
	if err := r.pruneChildren(ctx, cr, rendered.Objects); err != nil {
		return nil, err
	}
	if found.RecordingRules.Name(cr) != "" || cr.Status.Metrics != nil && cr.Status.Metrics.RecordingRules != "" {
		if err := r.pruneRecordingRules(ctx, cr, rendered.Objects); err != nil {
			return nil, err
		}
	}
	return applied, nil
}

// applyWaves is how many waves of objects are applied before the Deployment.
const applyWaves = 2

// applyWave is the wave in which object is applied: bindings after the rest, since the
// API server checks that the binder holds what a Role grants, and must find the Role
// for that. The Deployment comes last of all: its pods need the ServiceAccount, the
// configuration and the bindings.
func applyWave(object *unstructured.Unstructured) int {
	switch object.GetKind() {
	case "RoleBinding", "ClusterRoleBinding":
		return 1
	default:
		return 0
	}
}

// applyAll applies objects concurrently, maxConcurrentApplies at a time. A transient
// failure is returned before any refusal; of refusals, the first in objects' order.
func (r *writer) applyAll(ctx context.Context, cr *v1.SecondaryScheduler, objects []*unstructured.Unstructured,
	live ownership.Live) error {
	refusals := make([]error, len(objects))
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(maxConcurrentApplies)
	for i, object := range objects {
		group.Go(func() error {
			_, err := r.applyIfChanged(groupCtx, cr, object, live[ownership.ObjectID(object)])
			if refusal.Is(err) {
				refusals[i] = err // the others are still applied, as before a refusal was known
				return nil
			}
			return err
		})
	}
	if err := group.Wait(); err != nil {
		return err
	}
	for _, refused := range refusals {
		if refused != nil {
			return refused
		}
	}
	return nil
}

// maxConcurrentApplies bounds the requests one reconcile issues at once: a wave holds a
// dozen objects at most today, all applied in one round trip under this bound, and the
// bound keeps a future one from flooding the API server beside MaxConcurrentReconciles
// others.
const maxConcurrentApplies = 16

// applyDeployment applies the scheduler's Deployment if it changed and returns it as
// the API server answered, or as the cache holds it when nothing changed: observe must
// see the pod template just applied, which the cache may not have yet.
func (r *writer) applyDeployment(ctx context.Context, cr *v1.SecondaryScheduler, object *unstructured.Unstructured,
	live ownership.Live) (*appsv1.Deployment, error) {
	cached := live[ownership.ObjectID(object)]
	applied, err := r.applyIfChanged(ctx, cr, object, cached)
	if err != nil {
		return nil, err
	}
	if applied == nil {
		return cached.(*appsv1.Deployment), nil
	}
	deployment := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(applied.Object, deployment); err != nil {
		return nil, fmt.Errorf("read the applied Deployment: %w", err)
	}
	return deployment, nil
}

// applyIfChanged applies desired unless cached, the object as the cache holds it (nil
// when it holds none), already is what applying desired would make it. It returns the
// object as the API server answered, nil when nothing was applied. desired is not
// modified. When the cache tells a difference, the object is read again from the API
// server (readLive): the cache may lag behind the operator's last write, which is then
// not repeated, and only the API server's copy names who edited a field. What applying
// undoes of someone else's edits, cr's Events tell (EditUndone); an object the operator
// creates, or changes as cr now asks, is no such edit.
func (r *writer) applyIfChanged(ctx context.Context, cr *v1.SecondaryScheduler, desired *unstructured.Unstructured,
	cached client.Object) (*unstructured.Unstructured, error) {
	object := desired.DeepCopy()
	hash, err := drift.Hash(object.Object)
	if err != nil {
		return nil, err
	}
	annotations := object.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[drift.AppliedHashAnnotation] = hash
	object.SetAnnotations(annotations)
	var undone *undoneEdits
	if cached != nil {
		current, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cached)
		if err != nil {
			return nil, fmt.Errorf("read cached %s %s: %w", object.GetKind(), client.ObjectKeyFromObject(object), err)
		}
		// Typed objects from the cache carry no apiVersion and kind.
		current["apiVersion"], current["kind"] = object.GetAPIVersion(), object.GetKind()
		if drift.Unchanged(current, object.Object) {
			return nil, nil
		}
		if drift.EditedBySomeoneElse(current, object.Object) {
			live, err := r.readLive(ctx, object, cached.GetUID())
			if err != nil {
				return nil, err
			}
			if live != nil {
				if drift.Unchanged(live.Object, object.Object) {
					return live, nil
				}
				undone = findUndoneEdits(live, object)
			}
		}
		if err := r.replaceClusterIPService(ctx, cached); err != nil {
			return nil, err
		}
	}
	if err := r.applyObject(ctx, object); err != nil {
		return nil, err
	}
	logf.FromContext(ctx).V(2).Info("applied", "kind", object.GetKind(), "object", client.ObjectKeyFromObject(object))
	r.reportUndoneEdits(cr, undone)
	return object, nil
}

// replaceClusterIPService deletes the scheduler's Service when it still has the cluster
// IP that operators before the headless Service allocated: spec.clusterIP cannot change,
// so the apply that follows recreates it headless. A Service per scheduler with a
// cluster IP of its own exhausted the service range at a few hundred schedulers, and
// monitoring reads the pods' endpoints, which a headless Service lists as well.
func (r *writer) replaceClusterIPService(ctx context.Context, cached client.Object) error {
	service, ok := cached.(*corev1.Service)
	if !ok || service.Spec.ClusterIP == "" || service.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil
	}
	uid := service.UID
	err := r.Delete(ctx, service, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete Service %s to recreate it headless: %w", client.ObjectKeyFromObject(service), err)
	}
	return nil
}

// applyObject applies one object as the operator's field owner. object becomes what the
// API server answered. A refusal of the API server for the object's content is returned
// as a refusal.
func (r *writer) applyObject(ctx context.Context, object *unstructured.Unstructured) error {
	key := client.ObjectKeyFromObject(object)
	err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(FieldOwner), client.ForceOwnership)
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		// A precondition failed (the kept metrics token changed since it was read):
		// nothing is wrong, the next reconcile reads it anew.
		return fmt.Errorf("apply %s %s: changed meanwhile: %w", object.GetKind(), key, err)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err):
		return refusal.New(v1.ReasonApplyFailed,
			"the API server refused %s %s: %s; if it is a permission, a cluster admin grants it (docs/security.md), otherwise correct the field it names",
			object.GetKind(), key, apiErrorSummary(err))
	default:
		return fmt.Errorf("apply %s %s: %w", object.GetKind(), key, err)
	}
}
