// Package admission keeps in place the admission policies that decide, in the API
// server, who may run a secondary scheduler: a SecondaryScheduler makes the operator run a
// process that binds and deletes pods in every namespace, and read the ConfigMaps and
// Secret it names. The policies (internal/render renders them from bindata) check each
// creation and change of spec against the requester's own authority, so that neither the
// roles OLM generates for the CRD, nor the built-in admin and edit roles, nor the
// operator's own reach can be borrowed to run one.
//
// The operator applies them itself, because an OLM bundle cannot carry them, and fails
// closed: Check tells the reconciler, which runs no scheduler while they are not as
// rendered. Check only reads; Ensure writes, and only these objects, by name.
package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Policies are the admission policy and binding an operator keeps in place, as rendered.
type Policies struct {
	// objects are *ValidatingAdmissionPolicy and *ValidatingAdmissionPolicyBinding, in
	// the order they are written: a binding after its policy.
	objects []client.Object
}

// Desired renders the policies, with the scheduler images a cluster admin allows (none:
// any image).
func Desired(allowedImages []string) (*Policies, error) {
	rendered, err := render.AdmissionPolicies(allowedImages)
	if err != nil {
		return nil, fmt.Errorf("render the admission policies: %w", err)
	}
	desired := &Policies{}
	for _, object := range rendered {
		typed := emptyOf(object.GetKind())
		if typed == nil {
			return nil, fmt.Errorf("admission asset %s has unexpected kind %s", object.GetName(), object.GetKind())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, typed); err != nil {
			return nil, fmt.Errorf("convert %s %s: %w", object.GetKind(), object.GetName(), err)
		}
		desired.objects = append(desired.objects, typed)
	}
	return desired, nil
}

// emptyOf is an empty object of kind, one of the two kinds of Policies; nil for others.
func emptyOf(kind string) client.Object {
	switch kind {
	case "ValidatingAdmissionPolicy":
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}
	case "ValidatingAdmissionPolicyBinding":
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	}
	return nil
}

// specOf points at object's spec, for comparing and copying.
func specOf(object client.Object) any {
	switch typed := object.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return &typed.Spec
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return &typed.Spec
	}
	return nil
}

// asRendered reports whether live has want's spec and labels.
func asRendered(live, want client.Object) bool {
	for key, value := range want.GetLabels() {
		if live.GetLabels()[key] != value {
			return false // the operator's cache, which selects by label, would miss it
		}
	}
	return equality.Semantic.DeepEqual(specOf(live), specOf(want))
}

// Names are the names of the policies and bindings.
func (p *Policies) Names() []string {
	names := make([]string, 0, len(p.objects))
	for _, object := range p.objects {
		if !slices.Contains(names, object.GetName()) {
			names = append(names, object.GetName())
		}
	}
	return names
}

// NotInPlaceError says which policy or binding is missing or not as rendered.
type NotInPlaceError struct {
	// Kind and Name are the object's.
	Kind, Name string
	// Missing is true when the object does not exist, false when it differs.
	Missing bool
}

func (e *NotInPlaceError) Error() string {
	if e.Missing {
		return fmt.Sprintf("%s %s does not exist", e.Kind, e.Name)
	}
	return fmt.Sprintf("%s %s differs from what the operator renders (changed by someone else, or not yet updated)", e.Kind, e.Name)
}

// InPlace is what Check found: every policy and binding as rendered.
type InPlace struct {
	// Since is when the policies took effect at the earliest: the newest creation time
	// among them. A SecondaryScheduler created before was not checked at admission.
	Since metav1.Time
}

// Check reads the policies and bindings through reader and returns a *NotInPlaceError
// when one is missing or differs from the rendering; another error when reading failed.
func (p *Policies) Check(ctx context.Context, reader client.Reader) (*InPlace, error) {
	found := &InPlace{}
	for _, want := range p.objects {
		live := emptyOf(kindOf(want))
		err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
		if apierrors.IsNotFound(err) {
			return nil, &NotInPlaceError{Kind: kindOf(want), Name: want.GetName(), Missing: true}
		}
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", kindOf(want), want.GetName(), err)
		}
		if !asRendered(live, want) {
			return nil, &NotInPlaceError{Kind: kindOf(want), Name: want.GetName()}
		}
		if created := live.GetCreationTimestamp(); found.Since.Before(&created) {
			found.Since = created
		}
	}
	return found, nil
}

// Ensure creates the policies and bindings that are missing and replaces the spec of
// those that differ, in order. A whole spec is written, not applied: server-side apply
// would keep fields someone else added, such as a selector that narrows a binding. The
// update carries the resourceVersion read, so a change made meanwhile is read again, not
// overwritten. It reads through reader, which should be the API server rather than a
// cache selecting by label: an object whose label was removed would be missing from the
// cache and yet in the way of its creation.
func (p *Policies) Ensure(ctx context.Context, reader client.Reader, writer client.Writer) error {
	var failed []string
	for _, want := range p.objects {
		if err := ensure(ctx, reader, writer, want); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

func ensure(ctx context.Context, reader client.Reader, writer client.Writer, want client.Object) error {
	live := emptyOf(kindOf(want))
	err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
	if apierrors.IsNotFound(err) {
		if err := writer.Create(ctx, want.DeepCopyObject().(client.Object)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", kindOf(want), want.GetName(), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s %s: %w", kindOf(want), want.GetName(), err)
	}
	if asRendered(live, want) {
		return nil
	}
	updated := want.DeepCopyObject().(client.Object)
	updated.SetResourceVersion(live.GetResourceVersion())
	labels := live.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want.GetLabels())
	updated.SetLabels(labels)
	updated.SetAnnotations(live.GetAnnotations())
	if err := writer.Update(ctx, updated); err != nil {
		return fmt.Errorf("update %s %s: %w", kindOf(want), want.GetName(), err)
	}
	return nil
}

// kindOf is the kind of one of Policies' objects, whose typed objects carry none.
func kindOf(object client.Object) string {
	if _, ok := object.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
		return "ValidatingAdmissionPolicy"
	}
	return "ValidatingAdmissionPolicyBinding"
}
