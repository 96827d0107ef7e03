package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
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
// Deployment as it now is; the descheduler's Deployment comes after it. An object that needs cr's finalizer (needsFinalizer) is
// written once finalizer has landed (applyIfChanged); the others are written beside it.
func (r *writer) apply(ctx context.Context, cr *v1.SecondaryScheduler, found *gather.Facts, rendered *render.Result,
	live ownership.Live, finalizer *finalizerPatch) (*appsv1.Deployment, error) {
	var waves [applyWaves][]*unstructured.Unstructured
	// The scheduler's Deployment, and the others (the descheduler's), which come after it.
	var deployment *unstructured.Unstructured
	var otherDeployments []*unstructured.Unstructured
	for _, object := range rendered.Objects {
		switch {
		case object.GetKind() == "Deployment" && object.GetName() == render.WorkloadName(cr):
			deployment = object
		case object.GetKind() == "Deployment":
			otherDeployments = append(otherDeployments, object)
		default:
			wave := applyWave(object)
			waves[wave] = append(waves[wave], object)
		}
	}
	for _, wave := range waves {
		if err := r.applyAll(ctx, cr, wave, live, finalizer); err != nil {
			return nil, err
		}
	}
	var applied *appsv1.Deployment
	if deployment != nil {
		var err error
		if applied, err = r.applyDeployment(ctx, cr, deployment, live, finalizer); err != nil {
			return nil, err
		}
	}
	if err := r.applyAll(ctx, cr, otherDeployments, live, finalizer); err != nil {
		return nil, err
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
	live ownership.Live, finalizer *finalizerPatch) error {
	refusals := make([]error, len(objects))
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(maxConcurrentApplies)
	for i, object := range objects {
		group.Go(func() error {
			_, err := r.applyIfChanged(groupCtx, cr, object, live[ownership.ObjectID(object)], finalizer)
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
	live ownership.Live, finalizer *finalizerPatch) (*appsv1.Deployment, error) {
	cached := live[ownership.ObjectID(object)]
	applied, err := r.applyIfChanged(ctx, cr, object, cached, finalizer)
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

// applyIfChanged writes desired unless cached, the object as the cache holds it (nil
// when it holds none), already is what applying desired would make it. It returns the
// object as the API server answered or holds it, nil only when nothing was written and
// cached is that object. desired is not
// modified. Each write carries its own proof that the object is cr's (createIfAbsent, applyOwned): an
// object the cache does not hold is created, never applied, so that a name someone else
// took answers AlreadyExists rather than being taken over; one it holds is applied with
// its UID as a precondition. When the cache tells a difference, the object is read again
// from the API server (readLive): the cache may lag behind the operator's last write,
// which is then not repeated, and only the API server's copy names who edited a field.
// What applying undoes of someone else's edits, cr's Events tell (EditUndone); an object
// the operator creates, or changes as cr now asks, is no such edit. An object that only
// cr's finalizer deletes (needsFinalizer) is written once finalizer, the patch adding it
// that may still be in flight, has landed.
func (r *writer) applyIfChanged(ctx context.Context, cr *v1.SecondaryScheduler, desired *unstructured.Unstructured,
	cached client.Object, finalizer *finalizerPatch) (*unstructured.Unstructured, error) {
	if needsFinalizer(cr, desired) {
		if err := finalizer.landed(); err != nil {
			return nil, err
		}
	}
	object, err := withAppliedHash(desired)
	if err != nil {
		return nil, err
	}
	readNow := false
	if cached == nil {
		existing, err := r.createIfAbsent(ctx, cr, object)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return object, nil
		}
		cached, readNow = existing, true // cr's, written before the cache saw it
	}
	var undone *undoneEdits
	if _, metadataOnly := cached.(*metav1.PartialObjectMetadata); !metadataOnly {
		current, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cached)
		if err != nil {
			return nil, fmt.Errorf("read cached %s %s: %w", object.GetKind(), client.ObjectKeyFromObject(object), err)
		}
		// Typed objects from the cache carry no apiVersion and kind.
		current["apiVersion"], current["kind"] = object.GetAPIVersion(), object.GetKind()
		if drift.Unchanged(current, object.Object) {
			if readNow {
				// The API server's copy, which the caller does not hold.
				return &unstructured.Unstructured{Object: current}, nil
			}
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
		replaced, err := r.replaceClusterIPService(ctx, cached)
		if err != nil {
			return nil, err
		}
		if replaced {
			if err := r.recreate(ctx, cr, object); err != nil {
				return nil, err
			}
			return object, nil
		}
	}
	if err := r.applyOwned(ctx, object, cached); err != nil {
		return nil, err
	}
	logf.FromContext(ctx).V(2).Info("applied", "kind", object.GetKind(), "object", client.ObjectKeyFromObject(object))
	r.reportUndoneEdits(cr, undone)
	return object, nil
}

// withAppliedHash is a copy of desired annotated with the hash of its content, by which
// a later reconcile tells the operator's own writes from someone else's edits (drift).
func withAppliedHash(desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
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
	return object, nil
}

// recreate creates object anew after its predecessor was deleted to be replaced; an
// object made meanwhile under its name, even cr's, waits for the next reconcile.
func (r *writer) recreate(ctx context.Context, cr *v1.SecondaryScheduler, object *unstructured.Unstructured) error {
	existing, err := r.createIfAbsent(ctx, cr, object)
	if err == nil && existing != nil {
		err = fmt.Errorf("recreate %s %s: made anew meanwhile", object.GetKind(), client.ObjectKeyFromObject(object))
	}
	return err
}

// createIfAbsent creates object, which the cache does not hold as cr's, as the
// operator's field owner; object becomes what the API server answered. Creating rather
// than applying is the proof that no one else's object had the name: when one has,
// the API server answers AlreadyExists, and the object is read (ownership.ReadOwned):
// someone else's is refused (ObjectNameTaken) and left as it is; cr's, written before
// the cache saw it, is returned for the caller to apply over. Nil when object was created.
func (r *writer) createIfAbsent(ctx context.Context, cr *v1.SecondaryScheduler, object *unstructured.Unstructured) (client.Object, error) {
	err := r.Create(ctx, object, client.FieldOwner(FieldOwner))
	if err == nil {
		logf.FromContext(ctx).V(2).Info("created", "kind", object.GetKind(), "object", client.ObjectKeyFromObject(object))
		return nil, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, writeError("create", object, err)
	}
	existing, err := r.owned.ReadOwned(ctx, cr, object)
	if err != nil {
		return nil, err
	}
	if existing == nil {
		return nil, fmt.Errorf("create %s %s: deleted meanwhile, after it answered that it exists", object.GetKind(), client.ObjectKeyFromObject(object))
	}
	return existing, nil
}

// replaceClusterIPService deletes the scheduler's Service when it still has the cluster
// IP that operators before the headless Service allocated, and reports whether it did:
// spec.clusterIP cannot change, so the Service is then created anew, headless. A Service
// per scheduler with a cluster IP of its own exhausted the service range at a few hundred
// schedulers, and monitoring reads the pods' endpoints, which a headless Service lists as
// well.
func (r *writer) replaceClusterIPService(ctx context.Context, cached client.Object) (bool, error) {
	service, ok := cached.(*corev1.Service)
	if !ok || service.Spec.ClusterIP == "" || service.Spec.ClusterIP == corev1.ClusterIPNone {
		return false, nil
	}
	uid := service.UID
	err := r.Delete(ctx, service, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete Service %s to recreate it headless: %w", client.ObjectKeyFromObject(service), err)
	}
	return true, nil
}

// applyOwned applies object over owned, an object of cr's that the ownership check or a
// read proved so, as the operator's field owner; object becomes what the API server
// answered. owned's UID is the apply's precondition: an object deleted and made anew by
// someone else since owned was read is not written. An object the operator created
// (createIfAbsent) has its fields under an Update entry of the operator's field owner,
// which no apply would ever remove; they are claimed for the operator's applies first
// (claimCreatedFields), so that a field no longer rendered goes away.
func (r *writer) applyOwned(ctx context.Context, object *unstructured.Unstructured, owned client.Object) error {
	if err := r.claimCreatedFields(ctx, object, owned); err != nil {
		return err
	}
	object.SetUID(owned.GetUID())
	err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(FieldOwner), client.ForceOwnership)
	return writeError("apply", object, err)
}

// claimCreatedFields turns the managed-fields entry that creating owned wrote for the
// operator (operation Update) into the operator's apply entry, in place, with a JSON
// patch that first tests the entry is still the one the cache saw. Server-side apply
// removes the fields that an applier's own entry holds and its new configuration lacks;
// those of an Update entry, even the applier's, stay forever. The cache keeps who wrote
// each entry (not its fields, CacheOptions), which is all this needs. Nothing is sent for
// an object without such an entry, as every object is from its first change on.
func (r *writer) claimCreatedFields(ctx context.Context, object *unstructured.Unstructured, owned client.Object) error {
	entries := owned.GetManagedFields()
	created := slices.IndexFunc(entries, func(entry metav1.ManagedFieldsEntry) bool {
		return entry.Manager == FieldOwner && entry.Operation == metav1.ManagedFieldsOperationUpdate && entry.Subresource == ""
	})
	if created < 0 {
		return nil
	}
	if slices.ContainsFunc(entries, func(entry metav1.ManagedFieldsEntry) bool {
		return entry.Manager == FieldOwner && entry.Operation == metav1.ManagedFieldsOperationApply && entry.Subresource == ""
	}) {
		// Both: an apply came between the create and the cache (credentials apply the
		// metrics identity). The entries' field sets must then be merged, which needs
		// them whole: csaupgrade does that from the API server's copy.
		return r.mergeCreatedFields(ctx, object, owned)
	}
	// The API server keeps Apply entries before Update entries: an apply of the
	// operator's that the cache has not seen yet moves the created entry, and the tests
	// fail, rather than renaming it beside that Apply entry (whose fields would lose
	// their owner). Its time tells the entry from any other.
	entry := fmt.Sprintf("/metadata/managedFields/%d", created)
	operations := []map[string]string{
		{"op": "test", "path": entry + "/manager", "value": FieldOwner},
		{"op": "test", "path": entry + "/operation", "value": string(metav1.ManagedFieldsOperationUpdate)},
	}
	if written := entries[created].Time; written != nil {
		operations = append(operations, map[string]string{"op": "test", "path": entry + "/time", "value": written.UTC().Format(time.RFC3339)})
	}
	operations = append(operations, map[string]string{"op": "replace", "path": entry + "/operation", "value": string(metav1.ManagedFieldsOperationApply)})
	patch, err := json.Marshal(operations)
	if err != nil {
		return err
	}
	target := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: object.GetAPIVersion(), Kind: object.GetKind()},
		ObjectMeta: metav1.ObjectMeta{Namespace: object.GetNamespace(), Name: object.GetName()}}
	err = r.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldOwner))
	if apierrors.IsInvalid(err) {
		// The test failed: the entries moved since the cache saw them.
		return fmt.Errorf("claim the fields of %s %s: the operator's entry changed meanwhile: %w", object.GetKind(), client.ObjectKeyFromObject(object), err)
	}
	return writeError("claim the fields of", object, err)
}

// mergeCreatedFields merges the operator's Update entry of object into its apply entry,
// from the API server's copy.
func (r *writer) mergeCreatedFields(ctx context.Context, object *unstructured.Unstructured, owned client.Object) error {
	live, err := r.readLive(ctx, object, owned.GetUID())
	if err != nil || live == nil {
		return err
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(FieldOwner), FieldOwner)
	if err != nil || patch == nil {
		return err
	}
	err = r.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldOwner))
	return writeError("claim the fields of", object, err)
}

// writeError is err, the answer to a write of object (verb: create, apply), as the
// reconcile reports it: nil for none; a refusal for the object's content, which the user
// must fix; a conflict, a precondition that failed, as a wait for the next reconcile.
func writeError(verb string, object *unstructured.Unstructured, err error) error {
	key := client.ObjectKeyFromObject(object)
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		// A precondition failed (the object or the kept metrics token changed since it was
		// read): nothing is wrong, the next reconcile reads it anew.
		return fmt.Errorf("%s %s %s: changed meanwhile: %w", verb, object.GetKind(), key, err)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err):
		return refusal.New(v1.ReasonApplyFailed,
			"the API server refused %s %s: %s; if it is a permission, a cluster admin grants it (docs/security.md), otherwise correct the field it names",
			object.GetKind(), key, apiErrorSummary(err))
	default:
		return fmt.Errorf("%s %s %s: %w", verb, object.GetKind(), key, err)
	}
}
