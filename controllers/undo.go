package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/drift"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// An edit of the scheduler's objects by someone else (kubectl scale, edit, label) is
// written back by the next apply; the operator says so in a Warning Event, EditUndone,
// which names the field, who changed it, and the spec field to set instead.

// undoneEditFields bounds the fields one EditUndone Event names; it counts the others.
const undoneEditFields = 3

// readLive reads the object that desired is applied over from the API server, not the
// cache: only it has the managed fields that name who edited a field, which the cache
// strips from every object (CacheOptions) since they are about as large as the object.
// Keeping them cached would double the cache for the rare edit; reading them here costs
// one GET per object the operator is about to write, which it does only after a change.
// The answer of the apply cannot serve: a forced apply takes the edited fields back, so
// their editor is gone from it. Nil when the object is gone, or is no longer the one the
// cache held (uid): it is then no edit of an object of ours.
func (r *writer) readLive(ctx context.Context, desired *unstructured.Unstructured, uid types.UID) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", desired.GetKind(), client.ObjectKeyFromObject(desired), err)
	}
	if live.GetUID() != uid {
		return nil, nil
	}
	return live, nil
}

// undoneEdits are the edits of someone else in live that applying desired undoes, nil for
// none (the operator's own change).
type undoneEdits struct {
	object  *unstructured.Unstructured
	changes []drift.Change
	more    int
}

// findUndoneEdits are the edits of someone else that applying desired over live undoes.
func findUndoneEdits(live, desired *unstructured.Unstructured) *undoneEdits {
	changes, more := drift.UndoneEdits(live.Object, desired.Object, live.GetManagedFields(), FieldOwner, undoneEditFields)
	if len(changes) == 0 {
		return nil
	}
	return &undoneEdits{object: desired, changes: changes, more: more}
}

// reportUndoneEdits tells, in an Event on cr, what the operator just wrote back.
func (r *writer) reportUndoneEdits(cr *v1.SecondaryScheduler, edits *undoneEdits) {
	if edits == nil {
		return
	}
	r.Recorder.Eventf(cr, edits.object, corev1.EventTypeWarning, string(v1.ReasonEditUndone), "Apply", "%s",
		undoneEditMessage(cr, edits))
}

// undoneEditMessage says who changed which fields of which object, from what to what
// (never a value of a Secret), and what to do instead: the spec field that sets each, or
// that the operator owns it.
func undoneEditMessage(cr *v1.SecondaryScheduler, edits *undoneEdits) string {
	var editors []string
	for _, change := range edits.changes {
		if change.Editor != "" && !slices.Contains(editors, change.Editor) {
			editors = append(editors, change.Editor)
		}
	}
	who := "someone"
	if len(editors) == 1 {
		who = editors[0]
	}
	concealed := concealsValues(edits.object.GetKind())
	fields := make([]string, 0, len(edits.changes))
	for _, change := range edits.changes {
		field := change.Path.String()
		if !concealed {
			field += " from " + drift.Short(change.Desired) + " to " + drift.Short(change.Live)
		}
		if len(editors) > 1 && change.Editor != "" {
			field += " (by " + change.Editor + ")"
		}
		fields = append(fields, field)
	}
	restored := "it"
	if len(edits.changes) > 1 {
		restored = "them"
	}
	if edits.more > 0 {
		fields = append(fields, fmt.Sprintf("%d more fields", edits.more))
		restored = "them"
	}
	message := fmt.Sprintf("%s changed %s %s %s; the operator restored %s. %s", who, edits.object.GetKind(),
		client.ObjectKeyFromObject(edits.object), strings.Join(fields, ", "), restored, undoneEditAdvice(cr, edits))
	return usertext.Cut(message, maxEventNote-len("..."))
}

// undoneEditAdvice says, for each field of edits, which spec field of the SecondaryScheduler
// sets it, or that none does.
func undoneEditAdvice(cr *v1.SecondaryScheduler, edits *undoneEdits) string {
	var settable, owned []string
	bySpecField := map[string][]string{}
	for _, change := range edits.changes {
		path := change.Path.String()
		specField := specFieldOf(cr, edits.object, path)
		if specField == "" {
			owned = append(owned, path)
			continue
		}
		if !slices.Contains(settable, specField) {
			settable = append(settable, specField)
		}
		bySpecField[specField] = append(bySpecField[specField], path)
	}
	var advice []string
	for _, specField := range settable {
		advice = append(advice, fmt.Sprintf("to change %s, set %s of this SecondaryScheduler", strings.Join(bySpecField[specField], " and "), specField))
	}
	if len(owned) > 0 {
		advice = append(advice, fmt.Sprintf("%s no spec field sets: the operator owns it, and keeps it so while spec.managementState is Managed "+
			"(Unmanaged leaves the objects to you)", strings.Join(owned, " and ")))
	}
	text := strings.Join(advice, "; ")
	return strings.ToUpper(text[:1]) + text[1:] + "."
}

// concealsValues reports whether the values of kind's objects are kept out of messages:
// those of a Secret, whatever it holds (the scheduler's configuration with a metrics
// token, the token itself).
func concealsValues(kind string) bool { return kind == secretKind.name }

// schedulerContainer is the path of the scheduler's container in its Deployment.
const schedulerContainer = "spec.template.spec.containers[name=kube-scheduler]"

// specFields are the spec fields of a SecondaryScheduler that set the fields of its
// objects: of an object of kind (named name(cr), when name is set), the field at a path
// starting with prefix. The first that matches is the one; a field none matches, the
// operator sets on its own. TestSpecFieldsSetWhatTheySay changes each spec field and
// checks what of the rendered objects changes.
var specFields = []struct {
	kind, prefix string
	name         func(cr *v1.SecondaryScheduler) string
	specField    string
}{
	{kind: deploymentKind.name, prefix: "spec.replicas", specField: "spec.topology (mode HighlyAvailable, highlyAvailableTopology.maxReplicas)"},
	{kind: deploymentKind.name, prefix: schedulerContainer + ".image", specField: "spec.schedulerImage"},
	{kind: deploymentKind.name, prefix: schedulerContainer + ".command[0]", specField: "spec.schedulerImage"}, // the binary's path
	{kind: deploymentKind.name, prefix: schedulerContainer + ".command[2]", specField: "spec.logLevel"},       // --v
	{kind: deploymentKind.name, prefix: schedulerContainer + ".resources", specField: "spec.resources"},
	{kind: deploymentKind.name, prefix: "spec.template.spec.containers[name=" + render.ExtenderContainerName(""), specField: "spec.extenders[].container"},
	{kind: deploymentKind.name, prefix: "spec.template.spec.nodeSelector", specField: "spec.nodeSelector"},
	{kind: deploymentKind.name, prefix: "spec.template.spec.tolerations", specField: "spec.tolerations"},
	{kind: deploymentKind.name, prefix: "spec.template.spec.affinity", specField: "spec.affinity"},
	{kind: deploymentKind.name, prefix: "spec.template.spec.priorityClassName", specField: "spec.priorityClassName"},
	{kind: deploymentKind.name, prefix: "spec.template.spec.topologySpreadConstraints", specField: "spec.topology"},
	{kind: configMapKind.name, prefix: "data", name: render.ConfigObjectName, specField: configSpecFields},
	{kind: secretKind.name, prefix: "data", name: render.ConfigObjectName, specField: configSpecFields},
}

// configSpecFields are what the scheduler's configuration is rendered from.
const configSpecFields = "the spec it is rendered from (spec.profile, or the spec.schedulerConfig ConfigMap)"

// specFieldOf is the spec field of cr that sets the field at path of object, "" for none.
func specFieldOf(cr *v1.SecondaryScheduler, object *unstructured.Unstructured, path string) string {
	for _, field := range specFields {
		if field.kind == object.GetKind() && strings.HasPrefix(path, field.prefix) && (field.name == nil || field.name(cr) == object.GetName()) {
			return field.specField
		}
	}
	return ""
}
