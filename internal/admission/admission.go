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
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Policies are the admission policies and bindings an operator keeps in place, as
// rendered for its namespace.
type Policies struct {
	policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Desired renders the policies, with the scheduler images a cluster admin allows (none:
// any image).
func Desired(allowedImages []string) (*Policies, error) {
	objects, err := render.AdmissionPolicies(allowedImages)
	if err != nil {
		return nil, fmt.Errorf("render the admission policies: %w", err)
	}
	desired := &Policies{}
	for _, object := range objects {
		switch object.GetKind() {
		case "ValidatingAdmissionPolicy":
			policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, policy); err != nil {
				return nil, fmt.Errorf("convert ValidatingAdmissionPolicy %s: %w", object.GetName(), err)
			}
			desired.policies = append(desired.policies, policy)
		case "ValidatingAdmissionPolicyBinding":
			binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, binding); err != nil {
				return nil, fmt.Errorf("convert ValidatingAdmissionPolicyBinding %s: %w", object.GetName(), err)
			}
			desired.bindings = append(desired.bindings, binding)
		default:
			return nil, fmt.Errorf("admission asset %s has unexpected kind %s", object.GetName(), object.GetKind())
		}
	}
	return desired, nil
}

// Names are the names of the policies (and of their bindings, which share them).
func (p *Policies) Names() []string {
	names := make([]string, 0, len(p.policies))
	for _, policy := range p.policies {
		names = append(names, policy.Name)
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
	// Since is when the authority policy took effect at the earliest: the newer of the
	// creation times of its policy and its binding. A SecondaryScheduler created before
	// was not checked at admission.
	Since metav1.Time
}

// Check reads the policies and bindings through reader and returns a *NotInPlaceError
// when one is missing or differs from the rendering; another error when reading failed.
func (p *Policies) Check(ctx context.Context, reader client.Reader) (*InPlace, error) {
	found := &InPlace{}
	noteAuthority := func(object client.Object) {
		if object.GetName() == render.AuthorityPolicyName && found.Since.Before(ptrTo(object.GetCreationTimestamp())) {
			found.Since = object.GetCreationTimestamp()
		}
	}
	for _, want := range p.policies {
		live := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := get(ctx, reader, want, live); err != nil {
			return nil, err
		}
		if !labelled(live, want) || !equality.Semantic.DeepEqual(live.Spec, want.Spec) {
			return nil, &NotInPlaceError{Kind: "ValidatingAdmissionPolicy", Name: want.Name}
		}
		noteAuthority(live)
	}
	for _, want := range p.bindings {
		live := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := get(ctx, reader, want, live); err != nil {
			return nil, err
		}
		if !labelled(live, want) || !equality.Semantic.DeepEqual(live.Spec, want.Spec) {
			return nil, &NotInPlaceError{Kind: "ValidatingAdmissionPolicyBinding", Name: want.Name}
		}
		noteAuthority(live)
	}
	return found, nil
}

func ptrTo(t metav1.Time) *metav1.Time { return &t }

// get reads want's namesake into live, a missing one as a *NotInPlaceError.
func get(ctx context.Context, reader client.Reader, want, live client.Object) error {
	err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
	if apierrors.IsNotFound(err) {
		return &NotInPlaceError{Kind: kindName(want), Name: want.GetName(), Missing: true}
	}
	if err != nil {
		return fmt.Errorf("read %s %s: %w", kindName(want), want.GetName(), err)
	}
	return nil
}

// labelled reports whether live carries want's labels, which the operator's cache
// selects by: an unlabelled one would be invisible to it.
func labelled(live, want client.Object) bool {
	for key, value := range want.GetLabels() {
		if live.GetLabels()[key] != value {
			return false
		}
	}
	return true
}

// Ensure creates the policies and bindings that are missing and replaces the spec of
// those that differ, policies before bindings. A whole spec is written, not applied:
// server-side apply would keep fields someone else added, such as a selector that
// narrows a binding. It reads through reader, which should be the API server's rather
// than a cache selecting by label: an object whose label was removed would be missing
// from the cache and yet in the way of its creation.
func (p *Policies) Ensure(ctx context.Context, reader client.Reader, writer client.Writer) error {
	var failed []string
	for _, want := range p.policies {
		live := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := ensure(ctx, reader, writer, want, live, func() bool {
			if equality.Semantic.DeepEqual(live.Spec, want.Spec) && labelled(live, want) {
				return false
			}
			live.Spec = *want.Spec.DeepCopy()
			return true
		}); err != nil {
			failed = append(failed, err.Error())
		}
	}
	for _, want := range p.bindings {
		live := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := ensure(ctx, reader, writer, want, live, func() bool {
			if equality.Semantic.DeepEqual(live.Spec, want.Spec) && labelled(live, want) {
				return false
			}
			live.Spec = *want.Spec.DeepCopy()
			return true
		}); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// ensure creates want when live (its namesake, read into live) is missing, or updates
// live when mutate, which makes live's spec want's, reports a change. The update carries
// live's resourceVersion, so a change made meanwhile is read again, not overwritten.
func ensure(ctx context.Context, reader client.Reader, writer client.Writer, want, live client.Object, mutate func() bool) error {
	err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
	if apierrors.IsNotFound(err) {
		if err := writer.Create(ctx, want.DeepCopyObject().(client.Object)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", kindName(want), want.GetName(), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s %s: %w", kindName(want), want.GetName(), err)
	}
	if !mutate() {
		return nil
	}
	labels := live.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for key, value := range want.GetLabels() {
		labels[key] = value
	}
	live.SetLabels(labels)
	if err := writer.Update(ctx, live); err != nil {
		return fmt.Errorf("update %s %s: %w", kindName(want), want.GetName(), err)
	}
	return nil
}

func kindName(object client.Object) string {
	switch object.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return "ValidatingAdmissionPolicy"
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return "ValidatingAdmissionPolicyBinding"
	}
	return fmt.Sprintf("%T", object)
}
