// Package refwatch watches the objects that SecondarySchedulers reference by name, such
// as the ConfigMap of spec.schedulerConfig, with one narrow watch per referenced object.
// The operator so reacts to an edit of a user's ConfigMap without caching every ConfigMap
// in the cluster, which it neither owns nor needs.
package refwatch

import (
	"context"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watches keeps a watch on each referenced object while at least one owner references
// it, and turns each change of the object into an event for its owners.
type Watches struct {
	restClient rest.Interface
	resource   string
	objectType runtime.Object
	// labelSelector, when set, narrows each watch to the object when it carries these
	// labels: the operator then never receives the object otherwise.
	labelSelector string

	ctx    context.Context
	cancel context.CancelFunc
	events chan event.GenericEvent

	mu sync.Mutex
	// referenced maps each owner to the objects it references.
	referenced map[types.NamespacedName][]types.NamespacedName
	// watches holds the running watch of each referenced object.
	watches map[types.NamespacedName]context.CancelFunc
}

// Option changes what Watches watch.
type Option func(*Watches)

// WithLabelSelector has each watch deliver its object only while it matches selector (a
// label selector in its text form, such as "key" for "has the label key"). An object
// that comes to match, or stops matching, is an event like any change.
func WithLabelSelector(selector string) Option {
	return func(w *Watches) { w.labelSelector = selector }
}

// New watches objects of resource (for example "configmaps", whose objects have type
// objectType) through restClient, a client of their API group version.
func New(restClient rest.Interface, resource string, objectType runtime.Object, options ...Option) *Watches {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watches{
		restClient: restClient,
		resource:   resource,
		objectType: objectType,
		ctx:        ctx,
		cancel:     cancel,
		events:     make(chan event.GenericEvent, 64),
		referenced: map[types.NamespacedName][]types.NamespacedName{},
		watches:    map[types.NamespacedName]context.CancelFunc{},
	}
	for _, option := range options {
		option(w)
	}
	return w
}

// Start runs until ctx ends, then stops every watch. It makes Watches a manager Runnable.
func (w *Watches) Start(ctx context.Context) error {
	<-ctx.Done()
	w.cancel()
	return nil
}

// Source delivers an event for an owner each time the object it references changes.
func (w *Watches) Source() source.Source {
	return source.Channel(w.events, &handler.EnqueueRequestForObject{})
}

// Reference records that owner references object, or references nothing when object is
// nil, starting and stopping watches as needed.
func (w *Watches) Reference(owner types.NamespacedName, object *types.NamespacedName) {
	if object == nil {
		w.ReferenceAll(owner, nil)
		return
	}
	w.ReferenceAll(owner, []types.NamespacedName{*object})
}

// ReferenceAll records that owner references objects, and no others, starting and
// stopping watches as needed.
func (w *Watches) ReferenceAll(owner types.NamespacedName, objects []types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	previous := w.referenced[owner]
	if slices.Equal(previous, objects) {
		return
	}
	delete(w.referenced, owner)
	for _, object := range previous {
		w.stopIfUnreferenced(object)
	}
	if len(objects) == 0 {
		return
	}
	w.referenced[owner] = slices.Clone(objects)
	for _, object := range objects {
		if _, watching := w.watches[object]; !watching {
			w.watches[object] = w.watch(object)
		}
	}
}

// Watching reports whether object is being watched.
func (w *Watches) Watching(object types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, watching := w.watches[object]
	return watching
}

func (w *Watches) stopIfUnreferenced(object types.NamespacedName) {
	for _, referenced := range w.referenced {
		if slices.Contains(referenced, object) {
			return
		}
	}
	if stop, ok := w.watches[object]; ok {
		stop()
		delete(w.watches, object)
	}
}

// watch starts an informer that lists and watches the one object, by name.
func (w *Watches) watch(object types.NamespacedName) context.CancelFunc {
	byName := func(options *metav1.ListOptions) {
		options.FieldSelector = fields.OneTermEqualSelector("metadata.name", object.Name).String()
		options.LabelSelector = w.labelSelector
	}
	listWatch := toolscache.NewFilteredListWatchFromClient(w.restClient, w.resource, object.Namespace, byName)
	informer := toolscache.NewSharedIndexInformer(listWatch, w.objectType, 0, toolscache.Indexers{})
	notify := func(any) { w.notifyOwners(object) }
	_, _ = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, _ any) { notify(nil) },
		DeleteFunc: notify,
	})
	ctx, cancel := context.WithCancel(w.ctx)
	go informer.RunWithContext(ctx)
	return cancel
}

func (w *Watches) notifyOwners(object types.NamespacedName) {
	w.mu.Lock()
	var owners []types.NamespacedName
	for owner, referenced := range w.referenced {
		if slices.Contains(referenced, object) {
			owners = append(owners, owner)
		}
	}
	w.mu.Unlock()
	for _, owner := range owners {
		meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name}}
		select {
		case w.events <- event.GenericEvent{Object: client.Object(meta)}:
		case <-w.ctx.Done():
			return
		}
	}
}
