package controllers

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// childKind is a kind of object a scheduler is made of.
type childKind struct {
	name string
	// clusterScoped kinds cannot be owned by a namespaced SecondaryScheduler; the
	// finalizer deletes them.
	clusterScoped bool
	object        func() client.Object
	list          func() client.ObjectList
}

var (
	deploymentKind     = childKind{"Deployment", false, func() client.Object { return &appsv1.Deployment{} }, func() client.ObjectList { return &appsv1.DeploymentList{} }}
	serviceKind        = childKind{"Service", false, func() client.Object { return &corev1.Service{} }, func() client.ObjectList { return &corev1.ServiceList{} }}
	secretKind         = childKind{"Secret", false, func() client.Object { return &corev1.Secret{} }, func() client.ObjectList { return &corev1.SecretList{} }}
	configMapKind      = childKind{"ConfigMap", false, func() client.Object { return &corev1.ConfigMap{} }, func() client.ObjectList { return &corev1.ConfigMapList{} }}
	serviceAccountKind = childKind{"ServiceAccount", false, func() client.Object { return &corev1.ServiceAccount{} },
		func() client.ObjectList { return &corev1.ServiceAccountList{} }}
	roleKind        = childKind{"Role", false, func() client.Object { return &rbacv1.Role{} }, func() client.ObjectList { return &rbacv1.RoleList{} }}
	roleBindingKind = childKind{"RoleBinding", false, func() client.Object { return &rbacv1.RoleBinding{} }, func() client.ObjectList { return &rbacv1.RoleBindingList{} }}
	leaseKind       = childKind{"Lease", false, func() client.Object { return &coordinationv1.Lease{} },
		func() client.ObjectList { return &coordinationv1.LeaseList{} }}
	podDisruptionBudgetKind = childKind{"PodDisruptionBudget", false, func() client.Object { return &policyv1.PodDisruptionBudget{} },
		func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }}
	networkPolicyKind = childKind{"NetworkPolicy", false, func() client.Object { return &networkingv1.NetworkPolicy{} },
		func() client.ObjectList { return &networkingv1.NetworkPolicyList{} }}
	clusterRoleBindingKind = childKind{"ClusterRoleBinding", true, func() client.Object { return &rbacv1.ClusterRoleBinding{} },
		func() client.ObjectList { return &rbacv1.ClusterRoleBindingList{} }}
)

// allChildKinds are every kind render produces; the cache holds only objects of these
// kinds labelled as the operator's, in the namespaces where schedulers run.
var allChildKinds = []childKind{
	deploymentKind, serviceKind, configMapKind, secretKind, serviceAccountKind, roleKind, roleBindingKind, leaseKind, podDisruptionBudgetKind,
	networkPolicyKind, clusterRoleBindingKind,
}

// namespacesOf are where cr's objects of kind may be: "" for cluster-scoped kinds.
func namespacesOf(cr *v1.SecondaryScheduler, kind childKind) []string {
	switch {
	case kind.clusterScoped:
		return []string{""}
	case kind.name == roleBindingKind.name && cr.Namespace != render.AuthenticationReaderNamespace:
		return []string{cr.Namespace, render.AuthenticationReaderNamespace}
	default:
		return []string{cr.Namespace}
	}
}

// maxConcurrentDeletes bounds the delete requests one reconcile has in flight: a
// scheduler has about a dozen objects, and hundreds of SecondarySchedulers deleted at once
// must not each open a dozen requests.
const maxConcurrentDeletes = 8

// deleteChildren deletes cr's objects of the given kinds, those that are provably its own
// and nothing else (deleteOwned), concurrently.
func (r *writer) deleteChildren(ctx context.Context, cr *v1.SecondaryScheduler, kinds []childKind) error {
	var doomed []client.Object
	for _, kind := range kinds {
		for _, namespace := range namespacesOf(cr, kind) {
			objects, err := r.listLabelled(ctx, cr, kind, namespace)
			if err != nil {
				return err
			}
			doomed = append(doomed, objects...)
		}
	}
	return r.deleteAll(ctx, cr, doomed)
}

// listLabelled lists cr's objects of kind in namespace ("" for a cluster-scoped kind),
// as their labels say: deleteOwned proves each before it goes. Those in cr's namespace
// come from the cache: one created a moment ago that the cache has not seen yet is
// deleted at the reconcile its watch event brings, or by the garbage collector, through
// its owner reference. The others (cluster-scoped ones, the RoleBinding in kube-system),
// which nothing else deletes and which no cache may miss, are listed from the API server,
// selected by cr's owner labels, its UID included.
func (r *writer) listLabelled(ctx context.Context, cr *v1.SecondaryScheduler, kind childKind, namespace string) ([]client.Object, error) {
	list := kind.list()
	switch {
	case namespace == cr.Namespace:
		if !r.Tenancy.Allows(namespace) {
			return nil, nil // not readable; what is there, cr owns, and the garbage collector takes
		}
		if err := r.List(ctx, list, client.InNamespace(namespace), ownership.NameIndex(cr)); err != nil {
			return nil, fmt.Errorf("list the scheduler's %ss: %w", kind.name, err)
		}
	case cr.UID == "":
		return nil, nil // nothing can carry the owner labels of a resource without a UID (ownedBy)
	default:
		options := []client.ListOption{ownership.OwnedBySelector(cr)}
		if namespace != "" {
			options = append(options, client.InNamespace(namespace))
		}
		if err := r.APIReader.List(ctx, list, options...); err != nil {
			return nil, fmt.Errorf("list the scheduler's %ss: %w", kind.name, err)
		}
	}
	var objects []client.Object
	err := meta.EachListItem(list, func(item runtime.Object) error {
		objects = append(objects, item.(client.Object))
		return nil
	})
	return objects, err
}

// deleteAll deletes those of objects that are cr's, a few at a time.
func (r *writer) deleteAll(ctx context.Context, cr *v1.SecondaryScheduler, objects []client.Object) error {
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(maxConcurrentDeletes)
	for _, object := range objects {
		group.Go(func() error { return deleteOwned(groupCtx, r.Client, cr, object) })
	}
	return group.Wait()
}

// pruneChildren deletes cr's objects that the desired scheduler no longer has, such as
// the metrics-reader binding once the profile stops reading metrics.k8s.io.
func (r *writer) pruneChildren(ctx context.Context, cr *v1.SecondaryScheduler, desired []*unstructured.Unstructured) error {
	wanted := map[string]bool{}
	for _, object := range desired {
		wanted[object.GetKind()+"/"+object.GetNamespace()+"/"+object.GetName()] = true
	}
	var unwanted []client.Object
	for _, kind := range allChildKinds {
		list := kind.list()
		if err := r.List(ctx, list, ownership.NameIndex(cr)); err != nil {
			return fmt.Errorf("list the scheduler's %ss: %w", kind.name, err)
		}
		err := meta.EachListItem(list, func(item runtime.Object) error {
			object := item.(client.Object)
			if !wanted[kind.name+"/"+object.GetNamespace()+"/"+object.GetName()] {
				unwanted = append(unwanted, object)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return r.deleteAll(ctx, cr, unwanted)
}

// ownerOf maps an object of a scheduler to its SecondaryScheduler through its labels.
var ownerOf = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, object client.Object) []reconcile.Request {
	return ownerRequest(object)
})

// ownerRequest is the request of the SecondaryScheduler whose owner labels object
// carries, none without them.
func ownerRequest(object client.Object) []reconcile.Request {
	key, ok := ownership.OwnerKey(object)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// deleteOwned deletes object if, and only if, it is cr's, with a precondition on its UID
// so that an object replaced meanwhile by someone else's of the same name survives.
func deleteOwned(ctx context.Context, c client.Client, cr *v1.SecondaryScheduler, object client.Object) error {
	if !ownership.OwnedBy(object, cr) {
		return nil
	}
	uid := object.GetUID()
	err := c.Delete(ctx, object, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s: %w", ownership.KindOf(object), client.ObjectKeyFromObject(object), err)
	}
	return nil
}

// echoesOfWrites enqueues what the events of a scheduler's objects and pods ask at
// controller-runtime's low priority: most are the echoes of the operator's own writes
// (each create of a new scheduler's ten objects comes back as an event) or of the
// Deployment's progress, and a SecondaryScheduler just created or changed, whose events
// keep the default priority, goes before them when every worker is busy. Without the
// priority queue (a controller option) it is the handler itself.
func echoesOfWrites(events handler.EventHandler) handler.EventHandler {
	lower := func(queue workqueue.TypedRateLimitingInterface[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		if prioritized, ok := queue.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			return lowPriorityQueue{prioritized}
		}
		return queue
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			events.Create(ctx, e, lower(queue))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			events.Update(ctx, e, lower(queue))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			events.Delete(ctx, e, lower(queue))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			events.Generic(ctx, e, lower(queue))
		},
	}
}

// lowPriorityQueue adds every request at handler.LowPriority; a request already queued
// at a higher priority keeps it.
type lowPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (q lowPriorityQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q lowPriorityQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q lowPriorityQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q lowPriorityQueue) AddWithOpts(opts priorityqueue.AddOpts, items ...reconcile.Request) {
	opts.Priority = ptr.To(handler.LowPriority)
	q.PriorityQueue.AddWithOpts(opts, items...)
}
