package olminstall

import (
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	bindings := 0
	for _, object := range manual {
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
}
