package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// ownerKey names a SecondaryScheduler.
type ownerKey struct{ namespace, name string }

func (k ownerKey) String() string { return k.namespace + "/" + k.name }

// ownerState is what the tracker saw of one SecondaryScheduler and its objects, each
// with the time its watch event arrived.
type ownerState struct {
	exists               bool
	generation, observed int64
	available            bool
	// availableAt is when Available was first seen True.
	availableAt time.Time
	// current is whether Available is True for the current generation, and currentAt
	// when it last became so.
	current   bool
	currentAt time.Time
	// objects are the objects labelled as the owner's that exist, by kind/namespace/name,
	// with when each was first seen.
	objects map[string]time.Time
	// configHash is the Deployment's pod template's configuration hash, and when it
	// last changed.
	configHash   string
	configHashAt time.Time
	// goneAt is when the SecondaryScheduler, and lastObjectGoneAt when the last of its
	// objects, was seen deleted.
	goneAt, lastObjectGoneAt time.Time
}

// allObjectsAt is when the last of the objects that exist now was first seen.
func (s ownerState) allObjectsAt() time.Time {
	var latest time.Time
	for _, seen := range s.objects {
		if seen.After(latest) {
			latest = seen
		}
	}
	return latest
}

// gone is whether neither the SecondaryScheduler nor any of its objects exists.
func (s ownerState) gone() bool { return !s.exists && len(s.objects) == 0 }

// tracker watches SecondarySchedulers and the objects labelled as the operator's, and
// records when each change arrived: latencies come from those times, never from a poll.
type tracker struct {
	mu      sync.Mutex
	owners  map[ownerKey]*ownerState
	changed chan struct{}
}

// childKinds are the kinds the operator makes a scheduler of, watched by metadata only
// (the Deployment in full, for its pod template).
var childKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ServiceAccount"}, {Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "Service"}, {Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, {Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
}

// startTracker starts the watches and returns once they have synced.
func startTracker(ctx context.Context, config *rest.Config) (*tracker, error) {
	ours := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedByValue})
	byObject := map[client.Object]cache.ByObject{&appsv1.Deployment{}: {Label: ours}, &v1.SecondaryScheduler{}: {}}
	metadataObjects := map[string]client.Object{}
	for _, gvk := range childKinds {
		object := &metav1.PartialObjectMetadata{}
		object.SetGroupVersionKind(gvk)
		byObject[object] = cache.ByObject{Label: ours}
		metadataObjects[gvk.Kind] = object
	}
	informers, err := cache.New(config, cache.Options{Scheme: scheme, ByObject: byObject})
	if err != nil {
		return nil, fmt.Errorf("tracker cache: %w", err)
	}
	t := &tracker{owners: map[ownerKey]*ownerState{}, changed: make(chan struct{})}
	register := func(object client.Object, handler toolscache.ResourceEventHandlerFuncs) error {
		informer, err := informers.GetInformer(ctx, object)
		if err != nil {
			return err
		}
		_, err = informer.AddEventHandler(handler)
		return err
	}
	for kind, object := range metadataObjects {
		if err := register(object, t.childHandler(kind)); err != nil {
			return nil, err
		}
	}
	if err := register(&appsv1.Deployment{}, t.childHandler("Deployment")); err != nil {
		return nil, err
	}
	if err := register(&v1.SecondaryScheduler{}, t.schedulerHandler()); err != nil {
		return nil, err
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("tracker cache did not sync")
	}
	return t, nil
}

// update runs change on the state of the owner of key, under the lock, and wakes waiters.
func (t *tracker) update(key ownerKey, change func(*ownerState)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	state, ok := t.owners[key]
	if !ok {
		state = &ownerState{objects: map[string]time.Time{}}
		t.owners[key] = state
	}
	change(state)
	close(t.changed)
	t.changed = make(chan struct{})
}

func ownerOf(object metav1.Object) (ownerKey, bool) {
	objectLabels := object.GetLabels()
	key := ownerKey{objectLabels[render.LabelOwnerNamespace], objectLabels[render.LabelOwnerName]}
	return key, key.namespace != "" && key.name != ""
}

// childOf is the object of an event on a child of kind, its owner and its id
// (kind/namespace/name); false for an object without owner labels.
func childOf(kind string, object any) (client.Object, ownerKey, string, bool) {
	child, ok := deletedObject(object).(client.Object)
	if !ok {
		return nil, ownerKey{}, "", false
	}
	key, ok := ownerOf(child)
	return child, key, kind + "/" + child.GetNamespace() + "/" + child.GetName(), ok
}

// deletedObject is the object of a delete event, also when the informer missed the
// deletion and only knows the last state it saw.
func deletedObject(object any) any {
	if tombstone, ok := object.(toolscache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return object
}

func (t *tracker) childHandler(kind string) toolscache.ResourceEventHandlerFuncs {
	seen := func(object any) {
		now := time.Now()
		child, key, id, ok := childOf(kind, object)
		if !ok {
			return
		}
		t.update(key, func(state *ownerState) {
			if _, ok := state.objects[id]; !ok {
				state.objects[id] = now
			}
			if deployment, ok := child.(*appsv1.Deployment); ok {
				if hash := deployment.Spec.Template.Annotations[render.ConfigHashAnnotation]; hash != state.configHash {
					state.configHash, state.configHashAt = hash, now
				}
			}
		})
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, object any) { seen(object) },
		DeleteFunc: func(object any) {
			now := time.Now()
			_, key, id, ok := childOf(kind, object)
			if !ok {
				return
			}
			t.update(key, func(state *ownerState) {
				delete(state.objects, id)
				state.lastObjectGoneAt = now
			})
		},
	}
}

func (t *tracker) schedulerHandler() toolscache.ResourceEventHandlerFuncs {
	seen := func(object any) {
		now := time.Now()
		cr, ok := object.(*v1.SecondaryScheduler)
		if !ok {
			return
		}
		t.update(ownerKey{cr.Namespace, cr.Name}, func(state *ownerState) {
			state.exists = true
			state.generation, state.observed = cr.Generation, cr.Status.ObservedGeneration
			state.available = meta.IsStatusConditionTrue(cr.Status.Conditions, string(v1.ConditionAvailable))
			if state.available && state.availableAt.IsZero() {
				state.availableAt = now
			}
			current := state.available && state.observed == state.generation
			if current && !state.current {
				state.currentAt = now
			}
			state.current = current
		})
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, object any) { seen(object) },
		DeleteFunc: func(object any) {
			now := time.Now()
			cr, ok := deletedObject(object).(*v1.SecondaryScheduler)
			if !ok {
				return
			}
			t.update(ownerKey{cr.Namespace, cr.Name}, func(state *ownerState) {
				state.exists, state.available, state.current, state.goneAt = false, false, false, now
			})
		},
	}
}

// forget drops what the tracker knows of the owners in namespace that are gone, so that
// a name used again starts afresh.
func (t *tracker) forget(namespace string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, state := range t.owners {
		if key.namespace == namespace && state.gone() {
			delete(t.owners, key)
		}
	}
}

// state returns a copy of what the tracker knows of key (a zero state when nothing).
func (t *tracker) state(key ownerKey) ownerState {
	t.mu.Lock()
	defer t.mu.Unlock()
	state, ok := t.owners[key]
	if !ok {
		return ownerState{}
	}
	copied := *state
	copied.objects = make(map[string]time.Time, len(state.objects))
	for id, seen := range state.objects {
		copied.objects[id] = seen
	}
	return copied
}

// inNamespace returns copies of the states of the owners in namespace.
func (t *tracker) inNamespace(namespace string) map[ownerKey]ownerState {
	t.mu.Lock()
	keys := make([]ownerKey, 0)
	for key := range t.owners {
		if key.namespace == namespace {
			keys = append(keys, key)
		}
	}
	t.mu.Unlock()
	states := make(map[ownerKey]ownerState, len(keys))
	for _, key := range keys {
		states[key] = t.state(key)
	}
	return states
}

// waitFor waits until done, called with the lock held on the owners' states, returns
// true, or timeout passes.
func (t *tracker) waitFor(ctx context.Context, timeout time.Duration, what string, done func(owners map[ownerKey]*ownerState) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		finished, changed := done(t.owners), t.changed
		t.mu.Unlock()
		if finished {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%s: not within %v", what, timeout)
		case <-changed:
		}
	}
}
