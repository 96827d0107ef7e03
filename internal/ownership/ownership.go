// Package ownership proves which objects are a SecondaryScheduler's: only those are
// ever changed or deleted by the operator. OwnedBy is the proof (owner labels with the
// UID, the controller reference render gives, and for a binding or a PrometheusRule what
// render renders); Checker is the read-only stage that runs before anything is applied,
// refusing a name that the cache holds as someone else's, and ReadOwned the proof that
// follows a create answered AlreadyExists. The package cannot write:
// TestOwnershipCheckCannotWrite.
package ownership

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Checker proves, from what the cache holds, which of the objects a scheduler needs
// are already its own, and refuses when one is someone else's. An object the cache does
// not hold is not read: the write proves it absent (the operator creates it, never
// applies it, and a name taken in the meantime answers AlreadyExists, when ReadOwned
// reads it). It holds readers only (internal/readonly).
type Checker struct {
	cache, api client.Reader
	scheme     *runtime.Scheme
}

// NewChecker is a Checker reading the cache (the operator's own objects), and the API
// server for a kind the cache cannot hold and for ReadOwned; scheme tells which kinds
// the cache holds.
func NewChecker(cache, api client.Reader, scheme *runtime.Scheme) *Checker {
	return &Checker{cache: readonly.Wrap(cache), api: readonly.Wrap(api), scheme: scheme}
}

// Check refuses cr when an object the scheduler needs is held under its name but is not
// provably cr's: server-side apply would silently take it over. It runs after rendering
// and before anything is applied or a token requested. It returns the objects proven
// cr's by ObjectID: those the cache holds, which apply compares with what it would
// write, and of the kinds the cache cannot hold (the Prometheus Operator's), their
// metadata as the API server answered. A name missing from both is the write's to prove
// free (ReadOwned): a new scheduler costs no read of the names it is about to create.
func (c *Checker) Check(ctx context.Context, cr *v1.SecondaryScheduler, desired []*unstructured.Unstructured) (Live, error) {
	found := Live{}
	for _, object := range desired {
		owned, err := c.cachedOrRead(ctx, cr, object)
		if err != nil {
			return nil, err
		}
		if owned != nil {
			found[ObjectID(object)] = owned
		}
	}
	return found, nil
}

// cachedOrRead is the object of desired's name when it is cr's: as the cache holds it,
// or, for a kind the cache cannot hold, as the API server answers (ReadOwned); nil when
// the cache holds none, a refusal (NameTaken) when it holds someone else's.
func (c *Checker) cachedOrRead(ctx context.Context, cr *v1.SecondaryScheduler, desired *unstructured.Unstructured) (client.Object, error) {
	typed, err := c.scheme.New(desired.GroupVersionKind())
	if err != nil {
		return c.ReadOwned(ctx, cr, desired)
	}
	return getOwned(ctx, c.cache, cr, desired, typed.(client.Object))
}

// Live are a scheduler's objects as the cache holds them, by ObjectID.
type Live map[string]client.Object

// ObjectID names an object among a scheduler's: its kind, namespace and name.
func ObjectID(object client.Object) string {
	return KindOf(object) + "/" + object.GetNamespace() + "/" + object.GetName()
}

// ReadOwned reads from the API server the object of desired's kind and name: nil when
// there is none, the object when it is cr's, a refusal (NameTaken) when it is someone
// else's. A kind of the scheme is read whole, so that OwnedBy sees what a binding
// grants; another kind as metadata.
func (c *Checker) ReadOwned(ctx context.Context, cr *v1.SecondaryScheduler, desired *unstructured.Unstructured) (client.Object, error) {
	var existing client.Object
	if typed, err := c.scheme.New(desired.GroupVersionKind()); err == nil {
		existing = typed.(client.Object)
	} else {
		metadata := &metav1.PartialObjectMetadata{}
		metadata.SetGroupVersionKind(desired.GroupVersionKind())
		existing = metadata
	}
	return getOwned(ctx, c.api, cr, desired, existing)
}

// getOwned reads into existing the object of desired's name from reader: nil when there
// is none, existing when it is cr's, a refusal (NameTaken) when it is someone else's.
func getOwned(ctx context.Context, reader client.Reader, cr *v1.SecondaryScheduler, desired *unstructured.Unstructured,
	existing client.Object) (client.Object, error) {
	key := client.ObjectKeyFromObject(desired)
	if err := reader.Get(ctx, key, existing); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", desired.GetKind(), key, err)
	}
	if !OwnedBy(existing, cr) {
		return nil, NameTaken(desired, existing, cr)
	}
	return existing, nil
}

// NameTaken is the refusal of cr when existing, someone else's, has the name of desired.
func NameTaken(desired *unstructured.Unstructured, existing client.Object, cr *v1.SecondaryScheduler) error {
	return refusal.New(v1.ReasonObjectNameTaken,
		"%s %s already exists and does not belong to this SecondaryScheduler (uid %s)%s; the operator will not take it over, change it or delete it. "+
			"Delete or rename it, or give this SecondaryScheduler another name",
		desired.GetKind(), strings.TrimPrefix(client.ObjectKeyFromObject(desired).String(), "/"), cr.UID, proofNote(existing, cr))
}

// OwnedBy reports whether object is provably cr's. It carries cr's owner labels,
// including its UID (so that a SecondaryScheduler recreated under the same name does not
// inherit what its predecessor left). Labels are settable by whoever may create or update
// the object, so OwnedBy asks for what render gives cr's objects besides: in cr's
// namespace, a controller reference to cr (render gives every object there one);
// elsewhere, where no owner reference can reach cr, no controller at all, and what render
// renders: a binding's roleRef and subjects, a PrometheusRule's name. A binding that
// grants anything else, or an object another controls, is not the operator's to change
// or delete.
func OwnedBy(object client.Object, cr *v1.SecondaryScheduler) bool {
	labels := object.GetLabels()
	if labels[render.LabelOwnerNamespace] != cr.Namespace || labels[render.LabelOwnerName] != cr.Name ||
		labels[render.LabelOwnerUID] != string(cr.UID) || cr.UID == "" {
		return false
	}
	if !controlledAsRendered(object, cr) {
		return false
	}
	if binding, ok := bindingOf(object); ok {
		rendered, err := render.IsRenderedBinding(cr, binding)
		return err == nil && rendered
	}
	if object.GetObjectKind().GroupVersionKind().GroupKind() == render.PrometheusRuleGVK.GroupKind() {
		// The one PrometheusRule render gives cr; it may be in any namespace a Prometheus
		// is in, so the name is what tells it from another one carrying cr's labels.
		return object.GetName() == render.RecordingRuleName(cr)
	}
	return true
}

// controlledAsRendered reports whether object's controller reference is the one render
// gives it: cr for an object in cr's namespace, none for any other, which a reference to
// a namespaced SecondaryScheduler cannot reach.
func controlledAsRendered(object client.Object, cr *v1.SecondaryScheduler) bool {
	controller := metav1.GetControllerOfNoCopy(object)
	if object.GetNamespace() == "" || object.GetNamespace() != cr.Namespace {
		return controller == nil
	}
	if controller == nil {
		return false
	}
	owner, err := schema.ParseGroupVersion(controller.APIVersion)
	return err == nil && owner.Group == v1.GroupVersion.Group && controller.Kind == "SecondaryScheduler" &&
		controller.Name == cr.Name && controller.UID == cr.UID
}

// bindingOf reads a RoleBinding or ClusterRoleBinding for render.IsRenderedBinding.
func bindingOf(object client.Object) (render.Binding, bool) {
	switch binding := object.(type) {
	case *rbacv1.RoleBinding:
		return render.Binding{Kind: "RoleBinding", Namespace: binding.Namespace, Name: binding.Name, RoleRef: binding.RoleRef, Subjects: binding.Subjects}, true
	case *rbacv1.ClusterRoleBinding:
		return render.Binding{Kind: "ClusterRoleBinding", Name: binding.Name, RoleRef: binding.RoleRef, Subjects: binding.Subjects}, true
	}
	return render.Binding{}, false
}

// proofNote says what besides labels makes object the operator's, for a refusal.
func proofNote(object client.Object, cr *v1.SecondaryScheduler) string {
	if _, ok := bindingOf(object); ok {
		return " (a binding is the operator's only with its owner labels and the roleRef and subjects the operator renders)"
	}
	if object.GetNamespace() != "" && object.GetNamespace() == cr.Namespace {
		return " (an object in the SecondaryScheduler's namespace is the operator's only with its owner labels and a controller reference to the SecondaryScheduler)"
	}
	return ""
}

// OwnedBySelector selects the objects whose labels make them cr's (OwnedBy's label check),
// for a request the API server answers by label: kept beside OwnedBy so that both stay
// the same proof.
func OwnedBySelector(cr *v1.SecondaryScheduler) client.MatchingLabels {
	return client.MatchingLabels{render.LabelOwnerNamespace: cr.Namespace, render.LabelOwnerName: cr.Name, render.LabelOwnerUID: string(cr.UID)}
}

// NameSelector selects the objects labelled as those of a SecondaryScheduler of cr's
// namespace and name, whatever its UID: cr's, and those a predecessor of the same name
// left. It finds; OwnedBy (or OwnedBySelector, UID included) proves.
func NameSelector(cr *v1.SecondaryScheduler) client.MatchingLabels {
	return client.MatchingLabels{render.LabelOwnerNamespace: cr.Namespace, render.LabelOwnerName: cr.Name}
}

// OwnerNameIndex indexes a cache's objects by the namespace and name of the
// SecondaryScheduler their owner labels name (IndexOwnerName), whatever its UID. A list
// by NameIndex reads one scheduler's objects alone, where NameSelector, which a cache
// answers by matching the labels of every object of the kind, makes the reconciles of N
// schedulers read N times N objects.
const OwnerNameIndex = "operator.secondary-scheduler.io/owner-name"

// OwnerKey is the namespace and name of the SecondaryScheduler that object's owner labels
// name, false without both labels. It finds; OwnedBy proves.
func OwnerKey(object client.Object) (client.ObjectKey, bool) {
	objectLabels := object.GetLabels()
	key := client.ObjectKey{Namespace: objectLabels[render.LabelOwnerNamespace], Name: objectLabels[render.LabelOwnerName]}
	return key, key.Namespace != "" && key.Name != ""
}

// IndexOwnerName is OwnerNameIndex's index function: "namespace/name" of the owner that
// object's labels name (OwnerKey), none without both labels.
func IndexOwnerName(object client.Object) []string {
	key, ok := OwnerKey(object)
	if !ok {
		return nil
	}
	return []string{key.String()}
}

// NameIndex selects, from a cache indexed by OwnerNameIndex, what NameSelector selects.
func NameIndex(cr *v1.SecondaryScheduler) client.MatchingFields {
	return client.MatchingFields{OwnerNameIndex: client.ObjectKeyFromObject(cr).String()}
}

// KindOf is an object's kind, for messages: its GVK's, or its Go type.
func KindOf(object client.Object) string {
	if kind := object.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	return fmt.Sprintf("%T", object)
}
