package olminstall

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The suffixes of the ClusterRoles OLM creates for each API a CSV owns: with the owned CRD's
// name and version before them, they name the role (secondaryschedulers.operator.secondary-scheduler.io-v1-edit).
const (
	// ProvidedAPIAdmin grants every verb on the API's resource; it aggregates to admin.
	ProvidedAPIAdmin = "admin"
	// ProvidedAPIEdit grants create, update, patch and delete, and no reading (that comes
	// from the view role, which the built-in edit role aggregates); it aggregates to edit.
	ProvidedAPIEdit = "edit"
	// ProvidedAPIView grants get, list and watch; it aggregates to view.
	ProvidedAPIView = "view"
	// ProvidedAPICRDView grants get on the CRD itself; it aggregates to view.
	ProvidedAPICRDView = "crdview"
)

// providedAPIRoleKind is one of the ClusterRoles OLM creates per owned API: the built-in
// role it aggregates to and the verbs it grants (OLM's AdminVerbs, EditVerbs, ViewVerbs).
type providedAPIRoleKind struct {
	suffix      string
	aggregateTo string
	verbs       []string
}

var providedAPIRoleKinds = []providedAPIRoleKind{
	{ProvidedAPIAdmin, "admin", []string{"*"}},
	{ProvidedAPIEdit, "edit", []string{"create", "update", "patch", "delete"}},
	{ProvidedAPIView, "view", []string{"get", "list", "watch"}},
	{ProvidedAPICRDView, "view", []string{"get"}},
}

// The labels OLM puts on a provided API's ClusterRoles besides Kubernetes' aggregation label.
const (
	olmManagedLabel = "olm.managed"
	// opGroupAggregationLabelFormat takes the API's hash and the role's aggregation target;
	// the OperatorGroup's own ClusterRoles (not reproduced here) select these labels.
	opGroupAggregationLabelFormat = "olm.opgroup.permissions/aggregate-to-%s-%s"
)

// ProvidedAPIClusterRoleName is the name OLM gives the ClusterRole with suffix (ProvidedAPIAdmin,
// ...) for the CRD crdName, owned by a CSV at version.
func ProvidedAPIClusterRoleName(crdName, version, suffix string) string {
	return crdName + "-" + version + "-" + suffix
}

// ProvidedAPIRole is a ClusterRole OLM creates for a CRD the CSV owns.
type ProvidedAPIRole struct {
	// CRD is the name of the owned CRD, which owns the role.
	CRD string
	// Version is the owned entry's version, part of the role's name.
	Version string
	// Suffix is ProvidedAPIAdmin, ProvidedAPIEdit, ProvidedAPIView or ProvidedAPICRDView.
	Suffix string
	// ClusterRole is the role as OLM creates it, without its owner reference to the CRD
	// (whose UID only the cluster knows).
	ClusterRole *rbacv1.ClusterRole
}

// ProvidedAPIRoles are the ClusterRoles OLM's ensureClusterRolesForCSV creates, through
// ensureProvidedAPIClusterRole, once the CSV has succeeded: four per entry of
// spec.customresourcedefinitions.owned (so per version the CSV lists, not per version the
// CRD serves), whatever the install mode. The resource and group come from the entry's name,
// split at its first dot, as OLM splits it. (OLM creates admin, edit and view roles for the
// API services a CSV owns too; the csv package does not describe those, so a bundle with
// them is not read.)
func (b *Bundle) ProvidedAPIRoles() ([]ProvidedAPIRole, error) {
	var roles []ProvidedAPIRole
	for _, owned := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		plural, group, found := strings.Cut(owned.Name, ".")
		if !found {
			return nil, fmt.Errorf("owned CRD %q: a name is <plural>.<group>", owned.Name)
		}
		hash := fnv.New64a()
		hash.Write([]byte(owned.Kind + "." + owned.Version + "." + group))
		apiHash := fmt.Sprintf("%x", hash.Sum64())
		for _, kind := range providedAPIRoleKinds {
			rule := rbacv1.PolicyRule{Verbs: kind.verbs, APIGroups: []string{group}, Resources: []string{plural}}
			if kind.suffix == ProvidedAPICRDView {
				rule = rbacv1.PolicyRule{Verbs: kind.verbs, APIGroups: []string{apiextensionsv1.GroupName},
					Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{owned.Name}}
			}
			roles = append(roles, ProvidedAPIRole{CRD: owned.Name, Version: owned.Version, Suffix: kind.suffix,
				ClusterRole: &rbacv1.ClusterRole{
					ObjectMeta: metav1.ObjectMeta{
						Name: ProvidedAPIClusterRoleName(owned.Name, owned.Version, kind.suffix),
						Labels: map[string]string{
							"rbac.authorization.k8s.io/aggregate-to-" + kind.aggregateTo:          "true",
							fmt.Sprintf(opGroupAggregationLabelFormat, apiHash, kind.aggregateTo): "true",
							olmManagedLabel: "true",
						},
					},
					Rules: []rbacv1.PolicyRule{rule},
				}})
		}
	}
	return roles, nil
}

// applyProvidedAPIRoles creates or updates b's ProvidedAPIRoles, each with OLM's non-blocking,
// non-controller owner reference to its CRD, which must exist (OLM fails the sync otherwise).
//
// OLM labels them neither with the CSV nor with the OperatorGroup, and neither an upgrade nor
// the CSV's deletion removes them: a role whose owned entry the new CSV dropped stays, and
// the garbage collector deletes the roles with their CRD. So they are kept out of what an
// upgrade removes here too.
func (i *Installer) applyProvidedAPIRoles(ctx context.Context, b *Bundle) error {
	roles, err := b.ProvidedAPIRoles()
	if err != nil {
		return err
	}
	for _, role := range roles {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := i.Client.Get(ctx, client.ObjectKey{Name: role.CRD}, crd); err != nil {
			return fmt.Errorf("CRD %s of the ClusterRole %s: %w", role.CRD, role.ClusterRole.Name, err)
		}
		clusterRole := role.ClusterRole.DeepCopy()
		// OLM sets this lower-case kind on the CRD before taking the reference; the API
		// server's discovery maps lower-case kinds too, so the garbage collector resolves it.
		clusterRole.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "customresourcedefinition",
			Name: crd.Name, UID: crd.UID, BlockOwnerDeletion: new(false), Controller: new(false),
		}}
		object, err := i.toUnstructured(clusterRole)
		if err != nil {
			return err
		}
		if err := i.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("create ClusterRole %s: %w", clusterRole.Name, err)
		}
	}
	return nil
}
