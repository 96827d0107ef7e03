// Package olminstall installs an operator bundle on a cluster the way OLM does, for the
// install tests: OLM itself cannot run here (its modules and images are not available),
// so this reproduces what its catalog and OLM operators create for a registry+v1 bundle
// and an OperatorGroup, and nothing more:
//
//   - the bundle's CRDs, and its other manifests (ClusterRoles, Services, ...);
//   - the ServiceAccounts the install strategy names, in the operator's namespace;
//   - for each permissions entry, a Role and RoleBinding in the operator's namespace and in
//     every target namespace (OLM's OperatorGroup controller copies them there), or a
//     ClusterRole and ClusterRoleBinding when the group targets all namespaces;
//   - for each clusterPermissions entry, a ClusterRole and ClusterRoleBinding;
//   - the Deployments, with the OperatorGroup's annotations on their pod templates
//     (olm.targetNamespaces among them, which the operator reads through the downward API);
//   - for each CRD the CSV owns, whatever the install mode, the ClusterRoles of OLM's
//     ensureClusterRolesForCSV and ensureProvidedAPIClusterRole: <crd>-<version>-admin, -edit
//     and -view on its resource, and -crdview (get on the CRD), each labelled to aggregate to
//     the built-in admin, edit or view role, so that whoever may administer, edit or view a
//     namespace may do so with the operator's resources (see Bundle.ProvidedAPIRoles).
//
// A CSV that does not support the OperatorGroup's install mode is refused, as OLM fails it
// with reason UnsupportedOperatorGroup. Every object but the provided APIs' ClusterRoles is
// labelled with its owning CSV, as OLM's are, so an upgrade (a CSV that replaces another)
// removes what only the old one had once the new one is installed. The provided APIs'
// ClusterRoles are owned by their CRD instead, and stay as long as it does, as OLM's do.
package olminstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/crdready"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/installer"
)

// The labels OLM puts on what it creates for a CSV.
const (
	ownerLabel          = "olm.owner"
	ownerNamespaceLabel = "olm.owner.namespace"
	ownerKindLabel      = "olm.owner.kind"
	fieldOwner          = "olm"
)

// OperatorGroup is where an operator is installed and which namespaces it serves.
type OperatorGroup struct {
	Name      string
	Namespace string
	// TargetNamespaces are the namespaces it serves; none means all namespaces.
	TargetNamespaces []string
}

// InstallMode is the CSV install mode the group selects.
func (g OperatorGroup) InstallMode() string {
	switch {
	case len(g.TargetNamespaces) == 0:
		return csv.InstallModeAllNamespaces
	case len(g.TargetNamespaces) == 1 && g.TargetNamespaces[0] == g.Namespace:
		return csv.InstallModeOwnNamespace
	case len(g.TargetNamespaces) == 1:
		return csv.InstallModeSingleNamespace
	}
	return csv.InstallModeMultiNamespace
}

// ErrUnsupportedInstallMode is OLM's UnsupportedOperatorGroup: the CSV does not support
// the group's install mode, and nothing is installed.
var ErrUnsupportedInstallMode = errors.New("UnsupportedOperatorGroup")

// Bundle is a registry+v1 bundle read from its directory.
type Bundle struct {
	CSV *csv.ClusterServiceVersion
	// Objects are the bundle's other manifests: CRDs, ClusterRoles, Services, ...
	Objects []*unstructured.Unstructured
}

// Read reads the bundle in dir (manifests/ and metadata/).
func Read(dir string) (*Bundle, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, err
	}
	b := &Bundle{}
	for _, entry := range entries {
		documents, err := manifests.Documents(filepath.Join(dir, "manifests", entry.Name()))
		if err != nil {
			return nil, err
		}
		for _, document := range documents {
			object := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(document, &object.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", entry.Name(), err)
			}
			if object.GetKind() != csv.Kind {
				b.Objects = append(b.Objects, object)
				continue
			}
			if b.CSV != nil {
				return nil, fmt.Errorf("%s: a second ClusterServiceVersion", entry.Name())
			}
			b.CSV = &csv.ClusterServiceVersion{}
			if err := yaml.UnmarshalStrict(document, b.CSV); err != nil {
				return nil, fmt.Errorf("%s: %w", entry.Name(), err)
			}
		}
	}
	if b.CSV == nil {
		return nil, fmt.Errorf("bundle %s has no ClusterServiceVersion", dir)
	}
	return b, nil
}

// Supports reports whether the CSV declares mode supported.
func (b *Bundle) Supports(mode string) bool {
	return slices.ContainsFunc(b.CSV.Spec.InstallModes, func(m csv.InstallMode) bool { return m.Type == mode && m.Supported })
}

// ManualObjects are the objects the CSV's description asks a cluster admin to apply after
// installing, with their ServiceAccount subjects, and the parameters of their admission
// policy bindings, moved to the operator's namespace as the description says to.
func (b *Bundle) ManualObjects(operatorNamespace string) ([]*unstructured.Unstructured, error) {
	documents, err := bundle.ManualObjects(b.CSV.Spec.Description)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	for _, document := range documents {
		object := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(document, &object.Object); err != nil {
			return nil, err
		}
		subjects, _, _ := unstructured.NestedSlice(object.Object, "subjects")
		for _, subject := range subjects {
			if subject := subject.(map[string]any); subject["kind"] == rbacv1.ServiceAccountKind {
				subject["namespace"] = operatorNamespace
			}
		}
		if subjects != nil {
			if err := unstructured.SetNestedSlice(object.Object, subjects, "subjects"); err != nil {
				return nil, err
			}
		}
		if err := installer.MoveParameters(object, operatorNamespace); err != nil {
			return nil, err
		}
		objects = append(objects, object)
	}
	return objects, nil
}

// Installer creates what OLM would, with the rights OLM has (a cluster admin's client).
type Installer struct {
	Client client.Client
	Scheme *runtime.Scheme
}

// Install installs b for group. With replaces, the CSV of an earlier Install, it is an
// upgrade: what only the old CSV owned is deleted once the new Deployments exist.
func (i *Installer) Install(ctx context.Context, b *Bundle, group OperatorGroup, replaces *csv.ClusterServiceVersion) error {
	if mode := group.InstallMode(); !b.Supports(mode) {
		return fmt.Errorf("%w: %s does not support install mode %s", ErrUnsupportedInstallMode, b.CSV.Name, mode)
	}
	owner := map[string]string{ownerLabel: b.CSV.Name, ownerNamespaceLabel: group.Namespace, ownerKindLabel: csv.Kind}
	objects, err := i.strategyObjects(b, group)
	if err != nil {
		return err
	}
	for _, object := range b.Objects {
		object = object.DeepCopy()
		if isNamespaced(object.GetKind()) {
			object.SetNamespace(group.Namespace)
		}
		objects = append(objects, object)
	}
	// CRDs first, and Established, as OLM's InstallPlan does before the CSV.
	slices.SortStableFunc(objects, func(a, b *unstructured.Unstructured) int {
		return rank(a.GetKind()) - rank(b.GetKind())
	})
	for _, object := range objects {
		labels := object.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for key, value := range owner {
			labels[key] = value
		}
		object.SetLabels(labels)
		if err := i.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("create %s %s: %w", object.GetKind(), client.ObjectKeyFromObject(object), err)
		}
		if object.GetKind() == "CustomResourceDefinition" {
			if err := crdready.Wait(ctx, i.Client, object.GetName(), time.Minute); err != nil {
				return err
			}
		}
	}
	// OLM creates these once the CSV has succeeded, its Deployments available; Install does
	// not wait for that.
	if err := i.applyProvidedAPIRoles(ctx, b); err != nil {
		return err
	}
	if replaces != nil {
		return i.removeReplaced(ctx, replaces.Name, group.Namespace, objects)
	}
	return nil
}

// strategyObjects are the ServiceAccounts, RBAC and Deployments of the CSV's install strategy.
func (i *Installer) strategyObjects(b *Bundle, group OperatorGroup) ([]*unstructured.Unstructured, error) {
	strategy := b.CSV.Spec.InstallStrategy.StrategySpec
	var typed []client.Object
	serviceAccounts := map[string]bool{}
	serviceAccount := func(name string) {
		if !serviceAccounts[name] {
			serviceAccounts[name] = true
			typed = append(typed, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: group.Namespace}})
		}
	}
	subject := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: group.Namespace}}
	}
	for index, permission := range strategy.Permissions {
		serviceAccount(permission.ServiceAccountName)
		name := fmt.Sprintf("%s-%s-%d", b.CSV.Name, permission.ServiceAccountName, index)
		if group.InstallMode() == csv.InstallModeAllNamespaces {
			typed = append(typed, clusterGrant(name, permission.Rules, subject(permission.ServiceAccountName))...)
			continue
		}
		namespaces := append([]string{group.Namespace}, group.TargetNamespaces...)
		for _, namespace := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
			typed = append(typed,
				&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: permission.Rules},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
					Subjects: subject(permission.ServiceAccountName)})
		}
	}
	for index, permission := range strategy.ClusterPermissions {
		serviceAccount(permission.ServiceAccountName)
		name := fmt.Sprintf("%s-%s-cluster-%d", b.CSV.Name, permission.ServiceAccountName, index)
		typed = append(typed, clusterGrant(name, permission.Rules, subject(permission.ServiceAccountName))...)
	}
	for _, spec := range strategy.DeploymentSpecs {
		deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: group.Namespace, Labels: spec.Label}, Spec: *spec.Spec.DeepCopy()}
		if deployment.Spec.Template.Annotations == nil {
			deployment.Spec.Template.Annotations = map[string]string{}
		}
		deployment.Spec.Template.Annotations["olm.targetNamespaces"] = strings.Join(group.TargetNamespaces, ",")
		deployment.Spec.Template.Annotations["olm.operatorNamespace"] = group.Namespace
		deployment.Spec.Template.Annotations["olm.operatorGroup"] = group.Name
		if deployment.Spec.Template.Spec.ServiceAccountName != "" {
			serviceAccount(deployment.Spec.Template.Spec.ServiceAccountName)
		}
		typed = append(typed, deployment)
	}
	objects := make([]*unstructured.Unstructured, 0, len(typed))
	for _, object := range typed {
		converted, err := i.toUnstructured(object)
		if err != nil {
			return nil, err
		}
		objects = append(objects, converted)
	}
	return objects, nil
}

// toUnstructured converts a typed object to apply, without the fields a client leaves unset.
func (i *Installer) toUnstructured(object client.Object) (*unstructured.Unstructured, error) {
	gvks, _, err := i.Scheme.ObjectKinds(object)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(object)
	if err != nil {
		return nil, err
	}
	converted := &unstructured.Unstructured{Object: content}
	converted.SetGroupVersionKind(gvks[0])
	unstructured.RemoveNestedField(converted.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(converted.Object, "status")
	return converted, nil
}

func clusterGrant(name string, rules []rbacv1.PolicyRule, subjects []rbacv1.Subject) []client.Object {
	return []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects},
	}
}

// removeReplaced deletes what the replaced CSV owned and the new one did not create again,
// as OLM garbage-collects a replaced CSV's objects.
func (i *Installer) removeReplaced(ctx context.Context, oldCSV, namespace string, installed []*unstructured.Unstructured) error {
	kept := map[string]bool{}
	for _, object := range installed {
		kept[object.GetKind()+"/"+object.GetNamespace()+"/"+object.GetName()] = true
	}
	selector := client.MatchingLabels{ownerLabel: oldCSV, ownerNamespaceLabel: namespace}
	for _, kind := range []schema.GroupVersionKind{
		rbacv1.SchemeGroupVersion.WithKind("Role"), rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"), corev1.SchemeGroupVersion.WithKind("Service"),
		appsv1.SchemeGroupVersion.WithKind("Deployment"),
	} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
		if err := i.Client.List(ctx, list, selector); err != nil {
			return err
		}
		for index := range list.Items {
			object := &list.Items[index]
			if kept[kind.Kind+"/"+object.GetNamespace()+"/"+object.GetName()] {
				continue
			}
			if err := i.Client.Delete(ctx, object); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s %s of the replaced CSV: %w", kind.Kind, client.ObjectKeyFromObject(object), err)
			}
		}
	}
	return nil
}

// isNamespaced tells, for the kinds a registry+v1 bundle may hold, which live in a
// namespace (OLM creates them in the operator's).
func isNamespaced(kind string) bool {
	switch kind {
	case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "ConsoleYAMLSample",
		"ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink", "VolumeSnapshotClass":
		return false
	}
	return true
}

// rank orders creation: CRDs, then RBAC and ServiceAccounts, then the rest, Deployments last.
func rank(kind string) int {
	switch kind {
	case "CustomResourceDefinition":
		return 0
	case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		return 1
	case "Deployment":
		return 3
	}
	return 2
}
