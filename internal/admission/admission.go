// Package admission checks that the admission policies are in place that decide, in the API
// server, who may run a secondary scheduler: a SecondaryScheduler makes the operator run a
// process that binds and deletes pods in every namespace, and read the ConfigMaps and
// Secret it names. The policies (internal/render renders them from bindata) check each
// creation and change of spec against the requester's own authority, so that neither the
// roles OLM generates for the CRD, nor the built-in admin and edit roles, nor the
// operator's own reach can be borrowed to run one.
//
// The installer ships the policy and its binding (dist/install.yaml; on OLM, whose bundles
// cannot carry them, the one-time step of the CSV's description): the operator cannot
// create or change any admission policy, so its account lends no such power. It writes
// only the policy's parameters, a ConfigMap in its namespace, and fails closed: Check
// tells the reconciler, which runs no scheduler while the three are not as rendered.
// Check only reads; EnsureParameters writes, and only that ConfigMap, by name.
package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reach"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Policies are admission policies and bindings as rendered, and the parameters the
// operator writes for them.
type Policies struct {
	// objects are *ValidatingAdmissionPolicy, *MutatingAdmissionPolicy and their
	// bindings, in the order they are written: a binding after its policy; then the
	// parameters (*ConfigMap), if any.
	objects []client.Object
	// installed says the policies and bindings are the installer's, which the operator
	// checks and never writes: Ensure writes the parameters alone.
	installed bool
	// allowedImages are the images the parameters allow (none: any).
	allowedImages []string
}

// Desired renders the authority policy and binding the installer ships, reading their
// parameters in operatorNamespace, and those parameters: the scheduler images a cluster
// admin allows (none: any image).
func Desired(operatorNamespace string, allowedImages []string) (*Policies, error) {
	rendered, err := render.AuthorityAdmission(operatorNamespace)
	if err != nil {
		return nil, fmt.Errorf("render the admission policies: %w", err)
	}
	parameters, err := render.AuthorityParameters(operatorNamespace, allowedImages)
	if err != nil {
		return nil, fmt.Errorf("render the admission policies' parameters: %w", err)
	}
	policies, err := of(append(rendered, parameters))
	if err != nil {
		return nil, err
	}
	policies.installed = true
	policies.allowedImages = slices.Clone(allowedImages)
	return policies, nil
}

// DisallowedImageError says which image of a spec the parameters do not allow.
type DisallowedImageError struct {
	// Path is where the spec holds it (spec.extenders[].container.image).
	Path, Image string
	Allowed     []string
}

func (e *DisallowedImageError) Error() string {
	return fmt.Sprintf("%s %s is not among the images a cluster admin allows (%s)", e.Path, e.Image, strings.Join(e.Allowed, ", "))
}

// CheckImages returns a *DisallowedImageError for the first image of spec, at any place
// internal/reach finds, that the parameters do not allow. The admission policy refuses
// such a spec; this is the operator's own check, the same rule in Go
// (render.ImageAllowed), for a spec admitted while the parameters were changed by
// someone else.
func (p *Policies) CheckImages(spec *v1.SecondarySchedulerSpec) error {
	sinks, err := reach.Sinks()
	if err != nil {
		return err
	}
	for _, sink := range sinks {
		if sink.Check != reach.AllowedImage {
			continue
		}
		for _, image := range sink.Values(spec) {
			if !render.ImageAllowed(p.allowedImages, image) {
				return &DisallowedImageError{Path: sink.String(), Image: image, Allowed: p.allowedImages}
			}
		}
	}
	return nil
}

// Installed are rendered admission policies and bindings, validating or mutating, that
// the installer ships and the operator only checks (Check), such as the routing policy:
// Ensure writes none of them.
func Installed(rendered []*unstructured.Unstructured) (*Policies, error) {
	policies, err := of(rendered)
	if err != nil {
		return nil, err
	}
	policies.installed = true
	return policies, nil
}

func of(rendered []*unstructured.Unstructured) (*Policies, error) {
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

// emptyOf is an empty object of kind, one of the kinds of Policies; nil for others.
func emptyOf(kind string) client.Object {
	switch kind {
	case "ValidatingAdmissionPolicy":
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}
	case "ValidatingAdmissionPolicyBinding":
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	case "MutatingAdmissionPolicy":
		return &admissionregistrationv1.MutatingAdmissionPolicy{}
	case "MutatingAdmissionPolicyBinding":
		return &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	case "ConfigMap":
		return &corev1.ConfigMap{}
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
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		return &typed.Spec
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		return &typed.Spec
	case *corev1.ConfigMap:
		return &typed.Data
	}
	return nil
}

// asRendered reports whether live has want's spec, labels and annotations.
func asRendered(live, want client.Object) bool {
	for key, value := range want.GetLabels() {
		if live.GetLabels()[key] != value {
			return false // the operator's cache, which selects by label, would miss it
		}
	}
	for key, value := range want.GetAnnotations() {
		if live.GetAnnotations()[key] != value {
			return false // the routing policy lists the routes it carries there
		}
	}
	return equality.Semantic.DeepEqual(specOf(live), specOf(want))
}

// NotInPlaceError says which policy, binding or parameters are missing or not as
// rendered.
type NotInPlaceError struct {
	// Kind and Name are the object's.
	Kind, Name string
	// Missing is true when the object does not exist, false when it differs.
	Missing bool
	// Installed is true for an object the installer ships, which the operator never
	// writes: a cluster admin puts it back.
	Installed bool
}

func (e *NotInPlaceError) Error() string {
	what := fmt.Sprintf("%s %s differs from what the operator renders", e.Kind, e.Name)
	if e.Missing {
		what = fmt.Sprintf("%s %s does not exist", e.Kind, e.Name)
	}
	if e.Installed {
		return what + "; the installer ships it and the operator may not write it: a cluster admin applies it again " +
			"(dist/install.yaml of this release, or on OLM the objects of the CSV's description)"
	}
	return what + " (changed by someone else, or not yet written): the operator writes it again"
}

// InPlace is what Check found: every policy and binding as rendered.
type InPlace struct {
	// Since is when the policies took effect as they are at the earliest: the newest
	// creation or write among them (of any field manager, status aside). A
	// SecondaryScheduler created before was not provably checked at admission: an
	// in-place edit (validationActions: [Audit], a narrowed binding) undone since leaves
	// its creation time as it was, and only its managed fields tell when it was written.
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
			return nil, &NotInPlaceError{Kind: kindOf(want), Name: want.GetName(), Missing: true, Installed: p.isInstalled(want)}
		}
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", kindOf(want), want.GetName(), err)
		}
		if !asRendered(live, want) {
			return nil, &NotInPlaceError{Kind: kindOf(want), Name: want.GetName(), Installed: p.isInstalled(want)}
		}
		found.Since = newest(found.Since, lastWritten(live))
	}
	return found, nil
}

// lastWritten is when object was created or last written, as its managed fields record;
// the API server's own writes of status are left out, which follow each change of spec.
func lastWritten(object client.Object) metav1.Time {
	written := object.GetCreationTimestamp()
	for _, entry := range object.GetManagedFields() {
		if entry.Time != nil && entry.Subresource == "" {
			written = newest(written, *entry.Time)
		}
	}
	return written
}

func newest(a, b metav1.Time) metav1.Time {
	if a.Before(&b) {
		return b
	}
	return a
}

// IsParameters reports whether object is the policies' parameters (by kind, namespace
// and name), which the operator writes.
func (p *Policies) IsParameters(object client.Object) bool {
	if _, ok := object.(*corev1.ConfigMap); !ok {
		return false
	}
	for _, want := range p.objects {
		if _, ok := want.(*corev1.ConfigMap); ok && client.ObjectKeyFromObject(want) == client.ObjectKeyFromObject(object) {
			return true
		}
	}
	return false
}

// isInstalled reports whether object is one the installer ships, never written here.
func (p *Policies) isInstalled(object client.Object) bool {
	_, parameters := object.(*corev1.ConfigMap)
	return p.installed && !parameters
}

// Ensure writes the parameters (Desired): it creates them when missing and replaces their
// data when it differs, but leaves a same-named object the operator did not create alone
// (NotOursError). The policies and bindings are the installer's: it writes none. The
// update carries the resourceVersion read, so a change made meanwhile is read again, not
// overwritten. It reads through reader, which should be the API server rather than a
// cache selecting by label: an object whose label was removed would be missing from the
// cache and yet in the way of its creation.
func (p *Policies) Ensure(ctx context.Context, reader client.Reader, writer client.Writer) error {
	var failed []error
	for _, want := range p.objects {
		if p.isInstalled(want) {
			continue
		}
		if err := ensure(ctx, reader, writer, want); err != nil {
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
}

// NotOursError says that an object the operator would write has the name of one it did
// not create.
type NotOursError struct {
	Kind, Name string
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("%s %s exists and was not created by the operator (it lacks the label %s=%s): the operator leaves it alone; "+
		"delete it, or rename it, for the operator to create its own", e.Kind, e.Name, render.LabelManagedBy, render.ManagedByValue)
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
	if !render.ManagedByOperator(live.GetLabels()) {
		return &NotOursError{Kind: kindOf(want), Name: want.GetName()}
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
	annotations := live.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, want.GetAnnotations())
	updated.SetAnnotations(annotations)
	if err := writer.Update(ctx, updated); err != nil {
		return fmt.Errorf("update %s %s: %w", kindOf(want), want.GetName(), err)
	}
	return nil
}

// kindOf is the kind of one of Policies' objects, whose typed objects carry none.
func kindOf(object client.Object) string {
	switch object.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return "ValidatingAdmissionPolicy"
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		return "MutatingAdmissionPolicy"
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		return "MutatingAdmissionPolicyBinding"
	case *corev1.ConfigMap:
		return "ConfigMap"
	}
	return "ValidatingAdmissionPolicyBinding"
}
