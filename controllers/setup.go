package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refwatch"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// nodeGVK is the kind of Nodes, of which the operator caches metadata only: their names,
// to compare with the instance labels of node metrics.
var nodeGVK = corev1.SchemeGroupVersion.WithKind("Node")

// CacheOptions scopes the manager's cache to what the operator owns: of each kind a
// scheduler is made of, only the objects labelled as the operator's. ConfigMaps that
// users reference are read directly and watched one by one (internal/refwatch), so no
// cache ever holds every ConfigMap or Secret of the cluster. watchNamespace, when set,
// limits SecondarySchedulers and their objects to that namespace, but for the
// RoleBindings in kube-system.
func CacheOptions(watchNamespace string) cache.Options {
	ours := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedByValue})
	options := cache.Options{ByObject: map[client.Object]cache.ByObject{}}
	for _, kind := range allChildKinds {
		scope := cache.ByObject{Label: ours}
		if watchNamespace != "" && kind.name == roleBindingKind.name {
			scope.Namespaces = map[string]cache.Config{watchNamespace: {}, render.AuthenticationReaderNamespace: {}}
		}
		options.ByObject[kind.object()] = scope
	}
	if watchNamespace != "" {
		options.DefaultNamespaces = map[string]cache.Config{watchNamespace: {}}
	}
	return options
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *SecondarySchedulerReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1.SecondaryScheduler{}, schedulerNameIndex, indexSchedulerName); err != nil {
		return fmt.Errorf("index SecondarySchedulers by scheduler name: %w", err)
	}
	for _, watches := range []*refwatch.Watches{r.ConfigMapWatches, r.SecretWatches, r.CABundleWatches} {
		if err := mgr.Add(watches); err != nil {
			return fmt.Errorf("add reference watches: %w", err)
		}
	}
	// The operator's own status writes change neither generation nor deletion, so they
	// wake nothing.
	specOrDeletionChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
	onlyDeletes := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	controller := ctrl.NewControllerManagedBy(mgr).
		Named("secondaryscheduler").
		For(&v1.SecondaryScheduler{}, builder.WithPredicates(specOrDeletionChanged)).
		Watches(&v1.SecondaryScheduler{}, handler.EnqueueRequestsFromMapFunc(r.otherClaimants), builder.WithPredicates(onlyDeletes)).
		WatchesRawSource(r.ConfigMapWatches.Source()).
		WatchesRawSource(r.SecretWatches.Source()).
		WatchesRawSource(r.CABundleWatches.Source())
	for _, kind := range allChildKinds {
		controller = controller.Watches(kind.object(), ownerOf)
	}
	nodes := &metav1.PartialObjectMetadata{}
	nodes.SetGroupVersionKind(nodeGVK)
	nodesComeOrGo := predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
	controller = controller.Watches(nodes, handler.EnqueueRequestsFromMapFunc(r.loadAwareSchedulers),
		builder.OnlyMetadata, builder.WithPredicates(nodesComeOrGo))
	return controller.Complete(r)
}
