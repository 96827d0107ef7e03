package ownership

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// TestOwnershipCheckCannotWrite proves, over the package's own types and code, that the
// ownership check can reach no writer (internal/readonly/readonlytest): it runs before
// the operator has proven that any object is its own.
func TestOwnershipCheckCannotWrite(t *testing.T) {
	readonlytest.AssertCannotWrite(t, ".")
}

// ownedByScheduler is the SecondaryScheduler of TestOwnedBy; prometheusNamespace is where
// the Prometheus that evaluates its recording rules runs.
var ownedByScheduler = &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{
	Namespace: "platform", Name: "packer", UID: "4f1f5a8e-0000-4000-8000-000000000001"}}

const prometheusNamespace = "monitoring"

// TestOwnedBy: an object is the scheduler's only with its owner labels, UID included,
// the controller reference render gives (cr in cr's namespace, none elsewhere), and for a
// binding or a PrometheusRule what render renders. Each row that is not the scheduler's
// lacks one of these, whatever else it carries.
func TestOwnedBy(t *testing.T) {
	cr := ownedByScheduler
	ours := controllerOf(cr)
	foreign := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "theirs", UID: "9e0c7d1a-0000-4000-8000-00000000000f",
		Controller: ptr.To(true)}
	withoutController := func(object client.Object) { object.SetOwnerReferences(nil) }
	controlledBy := func(reference metav1.OwnerReference) func(client.Object) {
		return func(object client.Object) { object.SetOwnerReferences([]metav1.OwnerReference{reference}) }
	}
	withLabel := func(key, value string) func(client.Object) {
		return func(object client.Object) {
			labels := object.GetLabels()
			if value == "" {
				delete(labels, key)
			} else {
				labels[key] = value
			}
			object.SetLabels(labels)
		}
	}
	named := func(name string) func(client.Object) { return func(object client.Object) { object.SetName(name) } }
	otherRoleRef := func(object client.Object) {
		switch binding := object.(type) {
		case *rbacv1.ClusterRoleBinding:
			binding.RoleRef.Name = "cluster-admin"
		case *rbacv1.RoleBinding:
			binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}
		}
	}
	extraSubject := func(object client.Object) {
		subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}
		switch binding := object.(type) {
		case *rbacv1.ClusterRoleBinding:
			binding.Subjects = append(binding.Subjects, subject)
		case *rbacv1.RoleBinding:
			binding.Subjects = append(binding.Subjects, subject)
		}
	}
	subjectElsewhere := func(object client.Object) {
		binding := object.(*rbacv1.ClusterRoleBinding)
		binding.Subjects[0].Namespace = "elsewhere"
	}
	kubeScheduler := render.ClusterBindingName(cr, "kube-scheduler")
	authReader := render.ClusterBindingName(cr, "authentication-reader")
	leaseBinding := render.LeaseName(cr)

	tests := []struct {
		name   string
		object client.Object
		cr     *v1.SecondaryScheduler // nil: cr
		want   bool
	}{
		// Labels.
		{"deployment as rendered", deployment(cr), nil, true},
		{"labels without the UID", deployment(cr, withLabel(render.LabelOwnerUID, "")), nil, false},
		{"labels with a predecessor's UID", deployment(cr, withLabel(render.LabelOwnerUID, "0d5e6c2b-0000-4000-8000-000000000002")), nil, false},
		{"labels of another scheduler's name", deployment(cr, withLabel(render.LabelOwnerName, "other")), nil, false},
		{"labels of another scheduler's namespace", deployment(cr, withLabel(render.LabelOwnerNamespace, "other")), nil, false},
		{"no owner labels", deployment(cr, func(object client.Object) { object.SetLabels(nil) }), nil, false},
		{"a scheduler without a UID owns nothing", deployment(&v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: cr.Name}}),
			&v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: cr.Name}}, false},

		// The controller reference, in the scheduler's namespace.
		{"in the scheduler's namespace without a controller reference", deployment(cr, withoutController), nil, false},
		{"controlled by another object", deployment(cr, controlledBy(foreign)), nil, false},
		{"controller reference to another SecondaryScheduler", deployment(cr, controlledBy(controllerOf(&v1.SecondaryScheduler{
			ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: "other", UID: "0d5e6c2b-0000-4000-8000-000000000003"}}))), nil, false},
		{"controller reference to a predecessor of the same name", deployment(cr, controlledBy(withReference(ours, func(r *metav1.OwnerReference) {
			r.UID = "0d5e6c2b-0000-4000-8000-000000000002"
		}))), nil, false},
		{"controller reference with the scheduler's UID but another kind", deployment(cr, controlledBy(withReference(ours, func(r *metav1.OwnerReference) {
			r.Kind = "ReplicaSet"
		}))), nil, false},
		{"controller reference with the scheduler's UID but another group", deployment(cr, controlledBy(withReference(ours, func(r *metav1.OwnerReference) {
			r.APIVersion = "example.com/v1"
		}))), nil, false},
		{"controller reference with the scheduler's UID but another name", deployment(cr, controlledBy(withReference(ours, func(r *metav1.OwnerReference) {
			r.Name = "other"
		}))), nil, false},
		{"the scheduler only a plain owner", deployment(cr, controlledBy(withReference(ours, func(r *metav1.OwnerReference) {
			r.Controller = nil
		}))), nil, false},
		{"the scheduler the controller beside a plain owner", deployment(cr, func(object client.Object) {
			plain := foreign
			plain.Controller = nil
			object.SetOwnerReferences([]metav1.OwnerReference{plain, ours})
		}), nil, true},

		// A cluster-scoped binding: no owner reference can reach the scheduler.
		{"cluster role binding as rendered", binding(t, cr, kubeScheduler), nil, true},
		{"cluster role binding without the UID label", binding(t, cr, kubeScheduler, withLabel(render.LabelOwnerUID, "")), nil, false},
		{"cluster role binding controlled by another object", binding(t, cr, kubeScheduler, controlledBy(foreign)), nil, false},
		{"cluster role binding with another roleRef", binding(t, cr, kubeScheduler, otherRoleRef), nil, false},
		{"cluster role binding with another subject besides", binding(t, cr, kubeScheduler, extraSubject), nil, false},
		{"cluster role binding of a ServiceAccount of another namespace", binding(t, cr, kubeScheduler, subjectElsewhere), nil, false},
		{"cluster role binding of a name render does not give", binding(t, cr, kubeScheduler, named("secondary-scheduler:platform:packer:admin")), nil, false},

		// A RoleBinding outside the scheduler's namespace.
		{"role binding in kube-system as rendered", binding(t, cr, authReader), nil, true},
		{"role binding in kube-system controlled by another object", binding(t, cr, authReader, controlledBy(foreign)), nil, false},
		{"role binding in kube-system with another roleRef", binding(t, cr, authReader, otherRoleRef), nil, false},
		{"role binding in kube-system with another subject besides", binding(t, cr, authReader, extraSubject), nil, false},

		// A RoleBinding in the scheduler's namespace: both proofs.
		{"role binding in the scheduler's namespace as rendered", binding(t, cr, leaseBinding), nil, true},
		{"role binding in the scheduler's namespace without a controller reference", binding(t, cr, leaseBinding, withoutController), nil, false},
		{"role binding in the scheduler's namespace with another roleRef", binding(t, cr, leaseBinding, otherRoleRef), nil, false},
		{"role binding in the scheduler's namespace with another subject besides", binding(t, cr, leaseBinding, extraSubject), nil, false},

		// The PrometheusRule, in the Prometheus's namespace.
		{"recording rules as rendered", recordingRules(t, cr, prometheusNamespace), nil, true},
		{"recording rules under another name", recordingRules(t, cr, prometheusNamespace, named("team-rules")), nil, false},
		{"recording rules without the UID label", recordingRules(t, cr, prometheusNamespace, withLabel(render.LabelOwnerUID, "")), nil, false},
		{"recording rules controlled by another object", recordingRules(t, cr, prometheusNamespace, controlledBy(foreign)), nil, false},
		{"recording rules in the scheduler's namespace as rendered", recordingRules(t, cr, cr.Namespace), nil, true},
		{"recording rules in the scheduler's namespace without a controller reference", recordingRules(t, cr, cr.Namespace, withoutController), nil, false},
		{"recording rules read as metadata under another name", asMetadata(recordingRules(t, cr, prometheusNamespace, named("team-rules"))), nil, false},
		{"recording rules read as metadata", asMetadata(recordingRules(t, cr, prometheusNamespace)), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := cr
			if tt.cr != nil {
				owner = tt.cr
			}
			if got := OwnedBy(tt.object, owner); got != tt.want {
				t.Errorf("OwnedBy = %v, want %v, for %s %s/%s labels %v owners %v", got, tt.want, KindOf(tt.object),
					tt.object.GetNamespace(), tt.object.GetName(), tt.object.GetLabels(), tt.object.GetOwnerReferences())
			}
		})
	}
}

// TestRenderedObjectsAreOwned: every object of a scheduler that render's golden files
// hold is OwnedBy that scheduler, so that a stricter proof never disowns what the
// operator itself wrote.
func TestRenderedObjectsAreOwned(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("..", "render", "testdata", "*.golden.yaml"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden files (%v)", err)
	}
	checked := map[string]int{}
	for _, golden := range goldens {
		for _, object := range schedulerObjects(t, golden) {
			labels := object.GetLabels()
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{
				Namespace: labels[render.LabelOwnerNamespace], Name: labels[render.LabelOwnerName], UID: types.UID(labels[render.LabelOwnerUID])}}
			if !OwnedBy(object, cr) {
				t.Errorf("%s: %s %s/%s, as rendered, is not OwnedBy %s/%s", filepath.Base(golden), KindOf(object),
					object.GetNamespace(), object.GetName(), cr.Namespace, cr.Name)
			}
			// The cache's index finds what the label selector selects.
			if keys, want := IndexOwnerName(object), NameIndex(cr)[OwnerNameIndex]; len(keys) != 1 || keys[0] != want {
				t.Errorf("%s: %s %s/%s is indexed under %q, not %q", filepath.Base(golden), KindOf(object), object.GetNamespace(), object.GetName(), keys, want)
			}
			checked[KindOf(object)]++
		}
	}
	// The goldens hold every kind the proof treats apart.
	for _, kind := range []string{"Deployment", "ClusterRoleBinding", "RoleBinding", "PrometheusRule"} {
		if checked[kind] == 0 {
			t.Errorf("no %s of a scheduler in the golden files: checked %v", kind, checked)
		}
	}
}

// schedulerObjects are the objects of golden that carry a scheduler's owner UID label,
// typed when client-go knows their kind (as the cache holds them), else unstructured (as
// the operator reads a PrometheusRule).
func schedulerObjects(t *testing.T, golden string) []client.Object {
	t.Helper()
	file, err := os.Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	decoder := utilyaml.NewYAMLOrJSONDecoder(file, 4096)
	var objects []client.Object
	for {
		object := &unstructured.Unstructured{}
		if err := decoder.Decode(&object.Object); errors.Is(err, io.EOF) {
			return objects
		} else if err != nil {
			t.Fatalf("%s: %v", golden, err)
		}
		if object.GetKind() == "" || object.GetLabels()[render.LabelOwnerUID] == "" {
			continue // a scheduler configuration, or an object of the operator's own
		}
		typed, err := clientgoscheme.Scheme.New(object.GroupVersionKind())
		if err != nil {
			objects = append(objects, object)
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, typed); err != nil {
			t.Fatalf("%s: %s %s: %v", golden, object.GetKind(), object.GetName(), err)
		}
		objects = append(objects, typed.(client.Object))
	}
}

// controllerOf is the controller reference render gives cr's objects in its namespace.
func controllerOf(cr *v1.SecondaryScheduler) metav1.OwnerReference {
	return *metav1.NewControllerRef(cr, v1.GroupVersion.WithKind("SecondaryScheduler"))
}

func withReference(reference metav1.OwnerReference, edit func(*metav1.OwnerReference)) metav1.OwnerReference {
	edit(&reference)
	return reference
}

// deployment is cr's Deployment as render labels and controls it, then edited.
func deployment(cr *v1.SecondaryScheduler, edits ...func(client.Object)) client.Object {
	object := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: cr.Name + "-scheduler",
		Labels: render.OwnerLabels(cr), OwnerReferences: []metav1.OwnerReference{controllerOf(cr)}}}
	return edited(object, edits)
}

// binding is cr's binding of name as render renders it, typed as the cache holds it,
// then edited.
func binding(t *testing.T, cr *v1.SecondaryScheduler, name string, edits ...func(client.Object)) client.Object {
	t.Helper()
	bindings, err := render.Bindings(cr)
	if err != nil {
		t.Fatal(err)
	}
	for _, rendered := range bindings {
		if rendered.Name != name {
			continue
		}
		meta := metav1.ObjectMeta{Namespace: rendered.Namespace, Name: rendered.Name, Labels: render.OwnerLabels(cr)}
		if rendered.Namespace == cr.Namespace {
			meta.OwnerReferences = []metav1.OwnerReference{controllerOf(cr)}
		}
		subjects := append([]rbacv1.Subject(nil), rendered.Subjects...)
		var object client.Object = &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rendered.RoleRef, Subjects: subjects}
		if rendered.Kind == "ClusterRoleBinding" {
			object = &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: rendered.RoleRef, Subjects: subjects}
		}
		return edited(object, edits)
	}
	t.Fatalf("render renders no binding %s", name)
	return nil
}

// recordingRules is cr's PrometheusRule as render renders it in namespace, then edited.
func recordingRules(t *testing.T, cr *v1.SecondaryScheduler, namespace string, edits ...func(client.Object)) client.Object {
	t.Helper()
	object, err := render.RecordingRules(cr, render.RecordingRuleTarget{Namespace: namespace, Labels: map[string]string{"role": "recording-rules"}})
	if err != nil {
		t.Fatal(err)
	}
	return edited(object, edits)
}

// asMetadata is object as the ownership check reads a kind outside the scheme.
func asMetadata(object client.Object) client.Object {
	metadata := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: object.GetNamespace(), Name: object.GetName(),
		Labels: object.GetLabels(), OwnerReferences: object.GetOwnerReferences()}}
	metadata.SetGroupVersionKind(object.GetObjectKind().GroupVersionKind())
	return metadata
}

func edited(object client.Object, edits []func(client.Object)) client.Object {
	for _, edit := range edits {
		edit(object)
	}
	return object
}
