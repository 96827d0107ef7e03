package drift

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// appliedHashPath is where an object carries AppliedHashAnnotation.
var appliedHashPath = Path(nil).key("metadata").key("annotations").key(AppliedHashAnnotation)

// UndoneEdits are the edits of someone else that applying desired (with its
// AppliedHashAnnotation) over live undoes: the first limit fields of desired that live no
// longer holds, each with the manager that set it as managedFields (live's) tell, and how
// many more there are. None when live already is what applying desired makes it, or when
// the difference is the operator's own change: live carries another applied hash than
// desired, one that no manager but fieldOwner set. A hash removed, or set by another
// manager, is an edit like any other: the operator sets it on every object it applies.
func UndoneEdits(live, desired map[string]any, managedFields []metav1.ManagedFieldsEntry, fieldOwner string, limit int) ([]Change, int) {
	if Unchanged(live, desired) {
		return nil, 0
	}
	editors := editorsOf(managedFields, fieldOwner)
	if hash := appliedHash(live); hash != "" && hash != appliedHash(desired) &&
		editors.of(appliedHashPath) == "" {
		return nil, 0
	}
	changes, more := Changes(live, desired, limit)
	for i := range changes {
		changes[i].Editor = editors.of(changes[i].Path)
	}
	return changes, more
}

// EditedBySomeoneElse reports whether cached, an object as the operator's cache holds it
// (without managed fields), that does not hold desired (Unchanged is false), differs from
// it by someone else's edit rather than by the operator's own change alone: cached
// carries desired's applied hash, or none. It decides whether the operator reads the
// object's managed fields, at one request, to say who edited it (UndoneEdits): an object
// that carries another hash changed because the operator's content did, which costs no
// request. An edit made together with a change of the operator's content is written back
// all the same, unsaid.
func EditedBySomeoneElse(cached, desired map[string]any) bool {
	hash := appliedHash(cached)
	return hash == "" || hash == appliedHash(desired)
}

// editor is a field manager other than the operator, with the fields it set.
type editor struct {
	manager string
	time    *metav1.Time
	fields  *fieldpath.Set
}

type editors []editor

// editorsOf are the managers of managedFields but fieldOwner, the latest writer first.
// An entry whose fields cannot be read is left out: it names no field.
func editorsOf(managedFields []metav1.ManagedFieldsEntry, fieldOwner string) editors {
	var out editors
	for _, entry := range managedFields {
		if entry.Manager == fieldOwner || entry.FieldsV1 == nil {
			continue
		}
		fields := &fieldpath.Set{}
		if err := fields.FromJSON(entry.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		out = append(out, editor{manager: entry.Manager, time: entry.Time, fields: fields})
	}
	slices.SortStableFunc(out, func(a, b editor) int {
		switch {
		case a.time.Equal(b.time):
			return 0
		case b.time.Before(a.time):
			return -1
		default:
			return 1
		}
	})
	return out
}

// of is the latest manager that set the field at path or a field within it; failing
// that, one that set a field holding it whole (an atomic list, a map it owns as a value);
// "" when none did, as for a field that was removed.
func (e editors) of(path Path) string {
	for _, within := range []bool{true, false} {
		for _, candidate := range e {
			found := false
			candidate.fields.Iterate(func(owned fieldpath.Path) {
				found = found || related(owned, path, within)
			})
			if found {
				return candidate.manager
			}
		}
	}
	return ""
}

// related reports whether owned is path or within it (within), or else a field holding
// it.
func related(owned fieldpath.Path, path Path, within bool) bool {
	common := min(len(owned), len(path))
	for i := range common {
		if !matches(owned[i], path[i]) {
			return false
		}
	}
	if within {
		return len(owned) >= len(path)
	}
	return common > 0 && owned[common-1].FieldName != nil
}

// matches reports whether a managed field's path element is step.
func matches(element fieldpath.PathElement, step Step) bool {
	switch {
	case step.Name != "":
		if element.Key == nil {
			return false
		}
		return slices.ContainsFunc(*element.Key, func(field value.Field) bool {
			return field.Name == "name" && field.Value.IsString() && field.Value.AsString() == step.Name
		})
	case step.Index >= 0:
		return element.Index != nil && *element.Index == step.Index
	default:
		return element.FieldName != nil && *element.FieldName == step.Key
	}
}
