package render

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// bindingOf reads a rendered binding as an existing one.
func bindingOf(t *testing.T, object *unstructured.Unstructured) Binding {
	t.Helper()
	var typed rbacv1.ClusterRoleBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &typed); err != nil {
		t.Fatal(err)
	}
	return Binding{Kind: object.GetKind(), Namespace: object.GetNamespace(), Name: object.GetName(), RoleRef: typed.RoleRef, Subjects: typed.Subjects}
}

// Every binding Render makes, whatever the profile, is one IsRenderedBinding recognizes:
// a binding the operator makes is never left behind when its scheduler goes.
func TestEveryRenderedBindingIsRecognized(t *testing.T) {
	resources := map[string]*v1.SecondaryScheduler{
		"bin packing": secondaryScheduler("packer", nil),
		"metrics server": secondaryScheduler("reader", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}
		}),
		"bound token": secondaryScheduler("tokened", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile}
		}),
	}
	seen := map[string]bool{}
	for name, cr := range resources {
		facts := Facts{PrometheusAddress: "https://thanos-querier.openshift-monitoring.svc:9091"}
		if name == "bound token" {
			facts.MetricsIdentity = &MetricsIdentity{ClusterRole: "prometheus-k8s-reader"}
		}
		result, err := Render(cr, facts)
		if err != nil {
			t.Fatal(err)
		}
		for _, object := range result.Objects {
			if kind := object.GetKind(); kind != "RoleBinding" && kind != "ClusterRoleBinding" {
				continue
			}
			ours, err := IsRenderedBinding(cr, bindingOf(t, object))
			if err != nil {
				t.Fatal(err)
			}
			if !ours {
				t.Errorf("%s: rendered %s %s is not recognized as rendered", name, object.GetKind(), object.GetName())
			}
			if object.GetName() == LeaseName(cr) {
				seen["lease"] = true
				continue
			}
			seen[strings.TrimPrefix(object.GetName(), ClusterBindingName(cr, ""))] = true
		}
	}
	for _, role := range []string{"lease", "kube-scheduler", "volume-scheduler", "authentication-reader", "metrics-reader", "metrics-token"} {
		if !seen[role] {
			t.Errorf("no case rendered the %s binding", role)
		}
	}
}

// A binding that carries a scheduler's name but grants another role, or grants to
// another subject, is not the operator's.
func TestIsRenderedBinding(t *testing.T) {
	cr := secondaryScheduler("packer", nil)
	bindings, err := Bindings(cr)
	if err != nil {
		t.Fatal(err)
	}
	find := func(name string) Binding {
		t.Helper()
		for _, binding := range bindings {
			if binding.Name == name {
				binding.AnyClusterRole = false
				binding.Subjects = slices.Clone(binding.Subjects)
				return binding
			}
		}
		t.Fatalf("no binding %s rendered", name)
		return Binding{}
	}
	kubeScheduler := ClusterBindingName(cr, "kube-scheduler")
	metricsToken := ClusterBindingName(cr, "metrics-token")
	reader := ClusterBindingName(cr, "authentication-reader")
	tests := []struct {
		name   string
		change func(*Binding)
		want   bool
	}{
		{"as rendered", func(*Binding) {}, true},
		{"another subject", func(b *Binding) { b.Subjects[0].Name = "default" }, false},
		{"a subject in another namespace", func(b *Binding) { b.Subjects[0].Namespace = "kube-system" }, false},
		{"a user as subject", func(b *Binding) {
			b.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}
		}, false},
		{"a subject added", func(b *Binding) {
			b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:authenticated"})
		}, false},
		{"no subjects", func(b *Binding) { b.Subjects = nil }, false},
		{"another role", func(b *Binding) { b.RoleRef.Name = "cluster-admin" }, false},
		{"another name", func(b *Binding) { b.Name = "platform-admins" }, false},
		{"a RoleBinding of the same name", func(b *Binding) { b.Kind, b.Namespace = "RoleBinding", cr.Namespace }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			binding := find(kubeScheduler)
			tt.change(&binding)
			if got, err := IsRenderedBinding(cr, binding); err != nil || got != tt.want {
				t.Errorf("IsRenderedBinding = %v, %v; want %v", got, err, tt.want)
			}
		})
	}

	// The metrics token binding may bind any ClusterRole (the one the resource chose),
	// but only a ClusterRole, and only to the metrics ServiceAccount.
	token := find(metricsToken)
	token.RoleRef.Name = "prometheus-k8s-reader"
	if got, _ := IsRenderedBinding(cr, token); !got {
		t.Error("the metrics token binding of another allowed ClusterRole is not recognized")
	}
	token.RoleRef.Kind = "Role"
	if got, _ := IsRenderedBinding(cr, token); got {
		t.Error("a metrics token binding of a Role is recognized")
	}
	token = find(metricsToken)
	token.Subjects[0].Name = WorkloadName(cr)
	if got, _ := IsRenderedBinding(cr, token); got {
		t.Error("a metrics token binding of the scheduler's ServiceAccount is recognized")
	}

	// The authentication reader binding is a RoleBinding in kube-system, and only there.
	authentication := find(reader)
	if authentication.Kind != "RoleBinding" || authentication.Namespace != AuthenticationReaderNamespace {
		t.Fatalf("authentication reader binding rendered as %s in %q", authentication.Kind, authentication.Namespace)
	}
	authentication.Namespace = cr.Namespace
	if got, _ := IsRenderedBinding(cr, authentication); got {
		t.Error("an authentication reader binding outside kube-system is recognized")
	}
}
