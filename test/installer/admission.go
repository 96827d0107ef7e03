// Package installer puts in place, for tests, what the installer ships beside the operator
// and the operator may not write itself: the admission policies of config/admission
// (dist/install.yaml) and config/routing (dist/routing.yaml), and the ClusterRoles of
// config/rbac that schedulers are bound to, read from the files that ship, as
// config/default builds them.
package installer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// The directories of the repository that hold what the installer ships besides the
// operator.
const (
	// AdmissionDir holds the authority policy and its binding.
	AdmissionDir = "config/admission"
	// RoutingDir holds the routing policy and its binding.
	RoutingDir = "config/routing"
	// RBACDir holds the installer's RBAC, the roles schedulers are bound to among it.
	RBACDir = "config/rbac"
)

// MoveParameters makes object, when it is a binding whose parameters are namespaced, read
// them in operatorNamespace, as config/default and the CSV's description have an admin set
// it; the routing binding's RoutingTable is cluster-scoped, and names no namespace.
func MoveParameters(object *unstructured.Unstructured, operatorNamespace string) error {
	if _, found, _ := unstructured.NestedString(object.Object, "spec", "paramRef", "namespace"); !found {
		return nil
	}
	return unstructured.SetNestedField(object.Object, operatorNamespace, "spec", "paramRef", "namespace")
}

// objects are the objects dir under root lists in its kustomization, their parameters
// moved to operatorNamespace (MoveParameters).
func objects(root, dir, operatorNamespace string) ([]*unstructured.Unstructured, error) {
	dir = filepath.Join(root, dir)
	documents, err := manifests.Documents(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	if len(documents) != 1 {
		return nil, fmt.Errorf("%s/kustomization.yaml holds %d documents, want 1", dir, len(documents))
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(documents[0], &kustomization); err != nil {
		return nil, fmt.Errorf("parse %s/kustomization.yaml: %w", dir, err)
	}
	var found []*unstructured.Unstructured
	for _, file := range kustomization.Resources {
		documents, err := manifests.Documents(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		for _, document := range documents {
			object := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(document, &object.Object); err != nil {
				return nil, fmt.Errorf("parse %s: %w", file, err)
			}
			if err := MoveParameters(object, operatorNamespace); err != nil {
				return nil, err
			}
			found = append(found, object)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s ships no object", dir)
	}
	return found, nil
}

// Apply creates the objects of dir through c, an admin's client, or replaces them with
// what ships when they exist: what an admin's apply of the installer does.
func Apply(ctx context.Context, c client.Client, root, dir, operatorNamespace string) error {
	shipped, err := objects(root, dir, operatorNamespace)
	if err != nil {
		return err
	}
	return applyObjects(ctx, c, shipped)
}

// ApplySchedulerRoles applies the ClusterRoles of RBACDir that the operator binds
// schedulers to for the plugins their configuration enables (schedconfig.PluginClusterRoles),
// for an operator that runs as an admin, without the rest of the installer's RBAC.
func ApplySchedulerRoles(ctx context.Context, c client.Client, root string) error {
	shipped, err := objects(root, RBACDir, "")
	if err != nil {
		return err
	}
	roles := schedconfig.PluginClusterRoles()
	shipped = slices.DeleteFunc(shipped, func(object *unstructured.Unstructured) bool {
		return object.GetKind() != "ClusterRole" || !slices.Contains(roles, object.GetName())
	})
	if len(shipped) != len(roles) {
		return fmt.Errorf("%s ships %d of the %d ClusterRoles of plugins (%v)", RBACDir, len(shipped), len(roles), roles)
	}
	return applyObjects(ctx, c, shipped)
}

// ApplyPluginControllerRBAC applies what RBACDir ships for scheduler-plugins' controller,
// which the operator runs in operatorNamespace: its ServiceAccount there, its ClusterRole
// and binding, and its leader election's Role and RoleBinding in kube-system, for an
// operator that runs as an admin, without the rest of the installer's RBAC.
func ApplyPluginControllerRBAC(ctx context.Context, c client.Client, root, operatorNamespace string) error {
	shipped, err := objects(root, RBACDir, "")
	if err != nil {
		return err
	}
	shipped = slices.DeleteFunc(shipped, func(object *unstructured.Unstructured) bool {
		return !strings.HasPrefix(object.GetName(), render.PluginControllerName)
	})
	for _, object := range shipped {
		namespaced := object.GetKind() == "ServiceAccount" || object.GetKind() == "Role" || object.GetKind() == "RoleBinding"
		if namespaced && object.GetNamespace() == "" {
			object.SetNamespace(operatorNamespace)
		}
		if subjects, found, _ := unstructured.NestedSlice(object.Object, "subjects"); found {
			for _, subject := range subjects {
				subject.(map[string]any)["namespace"] = operatorNamespace
			}
			if err := unstructured.SetNestedSlice(object.Object, subjects, "subjects"); err != nil {
				return err
			}
		}
	}
	if len(shipped) != 5 {
		return fmt.Errorf("%s ships %d objects for %s, want its ServiceAccount, ClusterRole and binding, and its kube-system Role and binding",
			RBACDir, len(shipped), render.PluginControllerName)
	}
	return applyObjects(ctx, c, shipped)
}

// applyObjects creates each object, or replaces it with what ships when it exists.
func applyObjects(ctx context.Context, c client.Client, shipped []*unstructured.Unstructured) error {
	for _, object := range shipped {
		err := c.Create(ctx, object.DeepCopy())
		if apierrors.IsAlreadyExists(err) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(object.GroupVersionKind())
			if err = c.Get(ctx, client.ObjectKeyFromObject(object), live); err == nil {
				replacement := object.DeepCopy()
				replacement.SetResourceVersion(live.GetResourceVersion())
				err = c.Update(ctx, replacement)
			}
		}
		if err != nil {
			return fmt.Errorf("apply %s %s: %w", object.GetKind(), object.GetName(), err)
		}
	}
	return nil
}

// ApplyAdmissionPolicies applies the authority policy and its binding (AdmissionDir),
// reading their parameters in operatorNamespace.
func ApplyAdmissionPolicies(ctx context.Context, c client.Client, root, operatorNamespace string) error {
	return Apply(ctx, c, root, AdmissionDir, operatorNamespace)
}

// ApplyRoutingPolicy applies the routing policy and its binding (RoutingDir).
func ApplyRoutingPolicy(ctx context.Context, c client.Client, root string) error {
	return Apply(ctx, c, root, RoutingDir, "")
}

// DeleteRoutingPolicy deletes what ApplyRoutingPolicy applied, for a test that leaves the
// cluster to others as it found it.
func DeleteRoutingPolicy(ctx context.Context, c client.Client, root string) error {
	shipped, err := objects(root, RoutingDir, "")
	if err != nil {
		return err
	}
	var errs []error
	for _, object := range shipped {
		if err := c.Delete(ctx, object); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", object.GetKind(), object.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// ApplyDeschedulerClusterRole applies the ClusterRole of RBACDir that the operator binds a
// descheduler to (render.DeschedulerClusterRole), for an operator that runs as an admin,
// without the rest of the installer's RBAC.
func ApplyDeschedulerClusterRole(ctx context.Context, c client.Client, root string) error {
	shipped, err := objects(root, RBACDir, "")
	if err != nil {
		return err
	}
	shipped = slices.DeleteFunc(shipped, func(object *unstructured.Unstructured) bool {
		return object.GetKind() != "ClusterRole" || object.GetName() != render.DeschedulerClusterRole
	})
	if len(shipped) != 1 {
		return fmt.Errorf("%s ships %d ClusterRoles named %s, want 1", RBACDir, len(shipped), render.DeschedulerClusterRole)
	}
	return applyObjects(ctx, c, shipped)
}
