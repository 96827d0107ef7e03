package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// childKind is a kind of object a scheduler is made of.
type childKind struct {
	name   string
	object func() client.Object
	list   func() client.ObjectList
}

var (
	deploymentKind     = childKind{"Deployment", func() client.Object { return &appsv1.Deployment{} }, func() client.ObjectList { return &appsv1.DeploymentList{} }}
	serviceKind        = childKind{"Service", func() client.Object { return &corev1.Service{} }, func() client.ObjectList { return &corev1.ServiceList{} }}
	secretKind         = childKind{"Secret", func() client.Object { return &corev1.Secret{} }, func() client.ObjectList { return &corev1.SecretList{} }}
	configMapKind      = childKind{"ConfigMap", func() client.Object { return &corev1.ConfigMap{} }, func() client.ObjectList { return &corev1.ConfigMapList{} }}
	serviceAccountKind = childKind{"ServiceAccount", func() client.Object { return &corev1.ServiceAccount{} }, func() client.ObjectList { return &corev1.ServiceAccountList{} }}
	roleKind           = childKind{"Role", func() client.Object { return &rbacv1.Role{} }, func() client.ObjectList { return &rbacv1.RoleList{} }}
	roleBindingKind    = childKind{"RoleBinding", func() client.Object { return &rbacv1.RoleBinding{} }, func() client.ObjectList { return &rbacv1.RoleBindingList{} }}
	clusterRoleKind    = childKind{"ClusterRole", func() client.Object { return &rbacv1.ClusterRole{} },
		func() client.ObjectList { return &rbacv1.ClusterRoleList{} }}
	clusterRoleBindingKind = childKind{"ClusterRoleBinding", func() client.Object { return &rbacv1.ClusterRoleBinding{} },
		func() client.ObjectList { return &rbacv1.ClusterRoleBindingList{} }}
)

// allChildKinds are every kind render produces; the cache holds only objects of these
// kinds labelled as the operator's.
var allChildKinds = []childKind{
	deploymentKind, serviceKind, configMapKind, secretKind, serviceAccountKind, roleKind, roleBindingKind, clusterRoleKind, clusterRoleBindingKind,
}

// unownedChildKinds hold the objects an owner reference cannot reach: ClusterRoles and
// ClusterRoleBindings, and RoleBindings, one of which lives in kube-system. Owned
// RoleBindings are deleted with them, which the garbage collector would do a moment later anyway.
var unownedChildKinds = []childKind{roleBindingKind, clusterRoleKind, clusterRoleBindingKind}

// ownerSelector selects the objects of cr's scheduler, in every namespace.
func ownerSelector(cr *v1.SecondaryScheduler) client.MatchingLabels {
	return client.MatchingLabels{render.LabelOwnerNamespace: cr.Namespace, render.LabelOwnerName: cr.Name}
}

// deleteChildren deletes cr's objects of the given kinds: those the cache lists by label,
// and, by name, those render would produce, which the cache may not have seen yet.
func deleteChildren(ctx context.Context, c client.Client, cr *v1.SecondaryScheduler, kinds []childKind) error {
	var objects []client.Object
	for _, kind := range kinds {
		list := kind.list()
		if err := c.List(ctx, list, ownerSelector(cr)); err != nil {
			return fmt.Errorf("list the scheduler's objects: %w", err)
		}
		if err := meta.EachListItem(list, func(item runtime.Object) error {
			objects = append(objects, item.(client.Object))
			return nil
		}); err != nil {
			return err
		}
		for _, name := range renderedNames(cr, kind) {
			object := kind.object()
			object.SetNamespace(name.Namespace)
			object.SetName(name.Name)
			objects = append(objects, object)
		}
	}
	propagation := client.PropagationPolicy(metav1.DeletePropagationBackground)
	for _, object := range objects {
		if err := c.Delete(ctx, object, propagation); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %T %s: %w", object, client.ObjectKeyFromObject(object), err)
		}
	}
	return nil
}

// renderedNames are the names render gives cr's objects of one kind.
func renderedNames(cr *v1.SecondaryScheduler, kind childKind) []client.ObjectKey {
	inNamespace := func(names ...string) []client.ObjectKey {
		keys := make([]client.ObjectKey, 0, len(names))
		for _, name := range names {
			keys = append(keys, client.ObjectKey{Namespace: cr.Namespace, Name: name})
		}
		return keys
	}
	switch kind.name {
	case deploymentKind.name, serviceKind.name, serviceAccountKind.name:
		return inNamespace(render.SchedulerName(cr))
	case configMapKind.name, secretKind.name:
		return inNamespace(render.ConfigMapName(cr))
	case roleKind.name:
		return inNamespace(render.LeaseRoleName(cr))
	case roleBindingKind.name:
		return append(inNamespace(render.LeaseRoleName(cr)),
			client.ObjectKey{Namespace: render.AuthenticationReaderNamespace, Name: render.ClusterBindingName(cr, "authentication-reader")})
	case clusterRoleKind.name:
		return []client.ObjectKey{{Name: render.ClusterBindingName(cr, "metrics-reader")}}
	case clusterRoleBindingKind.name:
		return []client.ObjectKey{{Name: render.ClusterBindingName(cr, "kube-scheduler")}, {Name: render.ClusterBindingName(cr, "volume-scheduler")},
			{Name: render.ClusterBindingName(cr, "metrics-reader")}}
	}
	return nil
}

// ownerOf maps an object of a scheduler to its SecondaryScheduler through its labels.
var ownerOf = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, object client.Object) []reconcile.Request {
	objectLabels := labels.Set(object.GetLabels())
	namespace, name := objectLabels.Get(render.LabelOwnerNamespace), objectLabels.Get(render.LabelOwnerName)
	if namespace == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}}}
})

// pruneChildren deletes cr's objects that the desired scheduler no longer has, such as
// the metrics-reader ClusterRole once the profile stops reading metrics.k8s.io.
func pruneChildren(ctx context.Context, c client.Client, cr *v1.SecondaryScheduler, desired []*unstructured.Unstructured) error {
	wanted := map[string]bool{}
	for _, object := range desired {
		wanted[object.GetKind()+"/"+object.GetNamespace()+"/"+object.GetName()] = true
	}
	for _, kind := range allChildKinds {
		list := kind.list()
		if err := c.List(ctx, list, ownerSelector(cr)); err != nil {
			return fmt.Errorf("list the scheduler's objects: %w", err)
		}
		err := meta.EachListItem(list, func(item runtime.Object) error {
			object := item.(client.Object)
			if wanted[kind.name+"/"+object.GetNamespace()+"/"+object.GetName()] {
				return nil
			}
			if err := c.Delete(ctx, object); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s %s: %w", kind.name, client.ObjectKeyFromObject(object), err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
