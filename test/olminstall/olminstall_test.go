package olminstall

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
)

func TestInstallModeOfOperatorGroup(t *testing.T) {
	tests := []struct {
		name    string
		targets []string
		want    string
	}{
		{"no targets: all namespaces", nil, csv.InstallModeAllNamespaces},
		{"its own namespace", []string{"operators"}, csv.InstallModeOwnNamespace},
		{"one other namespace", []string{"team-a"}, csv.InstallModeSingleNamespace},
		{"several namespaces", []string{"team-a", "team-b"}, csv.InstallModeMultiNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			group := OperatorGroup{Name: "group", Namespace: "operators", TargetNamespaces: tt.targets}
			if got := group.InstallMode(); got != tt.want {
				t.Errorf("InstallMode() = %s, want %s", got, tt.want)
			}
		})
	}
}

// The repository's bundle: the install modes OLM would accept, and the objects its
// description asks an admin to apply, moved to the operator's namespace.
func TestRepositoryBundle(t *testing.T) {
	b, err := Read(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]bool{
		csv.InstallModeOwnNamespace: true, csv.InstallModeSingleNamespace: true,
		csv.InstallModeMultiNamespace: true, csv.InstallModeAllNamespaces: false,
	} {
		if got := b.Supports(mode); got != want {
			t.Errorf("Supports(%s) = %t, want %t", mode, got, want)
		}
	}
	manual, err := b.ManualObjects("scheduling")
	if err != nil {
		t.Fatal(err)
	}
	bindings, policies := 0, 0
	for _, object := range manual {
		if paramNamespace, found, _ := unstructured.NestedString(object.Object, "spec", "paramRef", "namespace"); found {
			policies++
			if paramNamespace != "scheduling" {
				t.Errorf("%s %s reads its parameters in namespace %s, want the operator's, scheduling", object.GetKind(), object.GetName(), paramNamespace)
			}
		}
		if strings.Contains(object.GetKind(), "AdmissionPolicy") {
			if object.GetNamespace() != "" {
				t.Errorf("%s %s has a namespace, %s", object.GetKind(), object.GetName(), object.GetNamespace())
			}
			continue
		}
		if object.GetNamespace() != "kube-system" {
			t.Errorf("%s %s is not in kube-system", object.GetKind(), object.GetName())
		}
		subjects, _, _ := unstructured.NestedSlice(object.Object, "subjects")
		for _, subject := range subjects {
			subject := subject.(map[string]any)
			if subject["kind"] == rbacv1.ServiceAccountKind {
				bindings++
				if subject["namespace"] != "scheduling" {
					t.Errorf("%s %s binds namespace %v, want the operator's, scheduling", object.GetKind(), object.GetName(), subject["namespace"])
				}
			}
		}
	}
	if bindings == 0 {
		t.Errorf("the description's objects bind no ServiceAccount: %v", manual)
	}
	if policies == 0 {
		t.Errorf("the description's objects bind no admission policy to its parameters: %v", manual)
	}
}

// The ClusterRoles OLM creates for the repository bundle's SecondaryScheduler API, which
// let namespace admins, editors and viewers use it through the built-in roles.
func TestRepositoryBundleProvidedAPIRoles(t *testing.T) {
	b, err := Read(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := b.ProvidedAPIRoles()
	if err != nil {
		t.Fatal(err)
	}
	const (
		crd   = "secondaryschedulers.operator.secondary-scheduler.io"
		group = "operator.secondary-scheduler.io"
		// FNV-1a of SecondaryScheduler.v1.operator.secondary-scheduler.io, as OLM hashes an API.
		apiHash = "51133341354f0885"
	)
	role := func(name, aggregateTo string, rule rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"rbac.authorization.k8s.io/aggregate-to-" + aggregateTo:               "true",
				"olm.opgroup.permissions/aggregate-to-" + apiHash + "-" + aggregateTo: "true",
				"olm.managed": "true",
			}},
			Rules: []rbacv1.PolicyRule{rule},
		}
	}
	tests := []struct {
		suffix string
		want   *rbacv1.ClusterRole
	}{
		{ProvidedAPIAdmin, role(crd+"-v1-admin", "admin",
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{group}, Resources: []string{"secondaryschedulers"}})},
		{ProvidedAPIEdit, role(crd+"-v1-edit", "edit",
			rbacv1.PolicyRule{Verbs: []string{"create", "update", "patch", "delete"}, APIGroups: []string{group}, Resources: []string{"secondaryschedulers"}})},
		{ProvidedAPIView, role(crd+"-v1-view", "view",
			rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{group}, Resources: []string{"secondaryschedulers"}})},
		{ProvidedAPICRDView, role(crd+"-v1-crdview", "view",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{crd}})},
	}
	// Two owned CRDs: SecondarySchedulers and the RoutingTable the operator writes.
	if len(all) != 2*len(tests) {
		t.Errorf("%d ClusterRoles, want %d: one of each kind for each of the two owned CRDs", len(all), 2*len(tests))
	}
	var roles []ProvidedAPIRole
	for _, role := range all {
		if role.CRD == crd {
			roles = append(roles, role)
		}
	}
	for _, tt := range tests {
		t.Run(tt.suffix, func(t *testing.T) {
			if got := ProvidedAPIClusterRoleName(crd, "v1", tt.suffix); got != tt.want.Name {
				t.Errorf("ProvidedAPIClusterRoleName() = %s, want %s", got, tt.want.Name)
			}
			for _, got := range roles {
				if got.Suffix == tt.suffix {
					if got.CRD != crd || got.Version != "v1" {
						t.Errorf("role of %s at %s, want %s at v1", got.CRD, got.Version, crd)
					}
					if diff := cmp.Diff(tt.want, got.ClusterRole); diff != "" {
						t.Errorf("ClusterRole (-want +got):\n%s", diff)
					}
					return
				}
			}
			t.Errorf("no %s ClusterRole", tt.suffix)
		})
	}
}

// Install's provided-API ClusterRoles are owned by their CRD, as OLM's are, and carry no
// CSV label, so that an upgrade leaves them; without the CRD, nothing is created.
func TestApplyProvidedAPIRoles(t *testing.T) {
	b, err := Read(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	crdNames := []string{"secondaryschedulers.operator.secondary-scheduler.io", "routingtables.operator.secondary-scheduler.io"}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		objects []client.Object
		wantErr bool
	}{
		{"the CRDs exist", []client.Object{
			&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdNames[0], UID: types.UID(crdNames[0] + "-uid")}},
			&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdNames[1], UID: types.UID(crdNames[1] + "-uid")}},
		}, false},
		{"no CRD", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objects...).Build()
			installer := &Installer{Client: c, Scheme: scheme}
			err := installer.applyProvidedAPIRoles(context.Background(), b)
			if (err != nil) != tt.wantErr {
				t.Fatalf("applyProvidedAPIRoles() error = %v, want an error: %t", err, tt.wantErr)
			}
			roles := &rbacv1.ClusterRoleList{}
			if err := c.List(context.Background(), roles); err != nil {
				t.Fatal(err)
			}
			if tt.wantErr {
				if len(roles.Items) != 0 {
					t.Errorf("%d ClusterRoles without their CRD, want none", len(roles.Items))
				}
				return
			}
			if len(roles.Items) != 4*len(crdNames) {
				t.Errorf("%d ClusterRoles, want %d", len(roles.Items), 4*len(crdNames))
			}
			for _, role := range roles.Items {
				crdName, _, _ := strings.Cut(role.Name, "-v1-")
				want := []metav1.OwnerReference{{APIVersion: "apiextensions.k8s.io/v1", Kind: "customresourcedefinition",
					Name: crdName, UID: types.UID(crdName + "-uid"), BlockOwnerDeletion: new(false), Controller: new(false)}}
				if diff := cmp.Diff(want, role.OwnerReferences); diff != "" {
					t.Errorf("%s owner references (-want +got):\n%s", role.Name, diff)
				}
				if owner, found := role.Labels[ownerLabel]; found {
					t.Errorf("%s is labelled with the CSV %s, which OLM does not do", role.Name, owner)
				}
			}
		})
	}
}

// The previous release's description opens its section with another heading: its
// objects are still found, so that an upgrade test installs that release as an admin
// following its own description would.
func TestPreviousBundleManualObjects(t *testing.T) {
	b, err := Read(filepath.Join("..", "e2e", "testdata", "previous-bundle"))
	if err != nil {
		t.Fatal(err)
	}
	manual, err := b.ManualObjects("scheduling")
	if err != nil {
		t.Fatal(err)
	}
	if len(manual) == 0 {
		t.Fatal("no objects found in the previous release's description")
	}
	for _, object := range manual {
		if object.GetNamespace() != "kube-system" {
			t.Errorf("%s %s is not in kube-system", object.GetKind(), object.GetName())
		}
	}
}
