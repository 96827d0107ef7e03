// Package drift tells whether an object in the cluster still is what the operator would
// apply, so that a reconcile that changes nothing writes nothing. Two checks decide:
// the object carries the hash of the very content the operator would apply now (so a
// field the operator stopped setting, which server-side apply would remove, counts as a
// change), and every field of that content still holds its value in the cluster (so an
// edit by someone else, which apply would undo, counts as one too). Fields the API
// server or other controllers add (defaults, status, annotations of their own) do not.
package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
)

// AppliedHashAnnotation holds, on every object the operator applies, the hash of the
// content it applied (without this annotation).
const AppliedHashAnnotation = "operator.secondary-scheduler.io/applied-hash"

// Hash is the hash of an object's content as the operator applies it: JSON of the object
// (whose map keys encoding/json sorts) without AppliedHashAnnotation and without
// metadata.resourceVersion, which an apply may carry as a precondition: it changes with
// every write, and a hash of it would change with every apply, each apply waking the
// next.
func Hash(desired map[string]any) (string, error) {
	content, err := json.Marshal(hashedContent(desired))
	if err != nil {
		return "", fmt.Errorf("hash the object to apply: %w", err)
	}
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:16]), nil
}

// hashedContent returns desired without AppliedHashAnnotation and resourceVersion,
// leaving desired as it is.
func hashedContent(desired map[string]any) map[string]any {
	metadata, _ := desired["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	_, hasHash := annotations[AppliedHashAnnotation]
	_, hasVersion := metadata["resourceVersion"]
	if !hasHash && !hasVersion {
		return desired
	}
	out := shallowCopy(desired)
	outMetadata := shallowCopy(metadata)
	delete(outMetadata, "resourceVersion")
	if hasHash {
		trimmed := make(map[string]any, len(annotations))
		for key, value := range annotations {
			if key != AppliedHashAnnotation {
				trimmed[key] = value
			}
		}
		if len(trimmed) == 0 {
			delete(outMetadata, "annotations")
		} else {
			outMetadata["annotations"] = trimmed
		}
	}
	out["metadata"] = outMetadata
	return out
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for key, value := range m {
		out[key] = value
	}
	return out
}

// Unchanged reports whether live, an object as the cluster holds it, is already what
// applying desired would make it: live carries desired's AppliedHashAnnotation and holds
// every field desired sets.
func Unchanged(live, desired map[string]any) bool {
	hash := appliedHash(desired)
	return hash != "" && appliedHash(live) == hash && Holds(live, desired)
}

// appliedHash is the AppliedHashAnnotation of object, "" when it has none.
func appliedHash(object map[string]any) string {
	metadata, _ := object["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	value, _ := annotations[AppliedHashAnnotation].(string)
	return value
}

// Holds reports whether live holds every field that desired sets, with the same value.
// Maps in live may have more keys; lists must have as many items, each holding its
// counterpart (a list the operator sets is wholly its own: server-side apply would make
// it so). Numbers compare by value, whatever their Go type. An empty map or list in
// desired matches a missing field (the API server drops them), and a null anything.
func Holds(live, desired any) bool {
	switch want := desired.(type) {
	case nil:
		// A null in an apply request sets nothing (creationTimestamp: null, as typed
		// objects serialize): whatever live holds there is not the operator's.
		return true
	case map[string]any:
		have, ok := live.(map[string]any)
		if !ok {
			return len(want) == 0 && live == nil
		}
		for key, value := range want {
			liveValue, present := have[key]
			if !present {
				if empty(value) {
					continue
				}
				return false
			}
			if !Holds(liveValue, value) {
				return false
			}
		}
		return true
	case []any:
		have, ok := live.([]any)
		if !ok {
			return len(want) == 0 && live == nil
		}
		if len(have) != len(want) {
			return false
		}
		for i := range want {
			if !Holds(have[i], want[i]) {
				return false
			}
		}
		return true
	}
	if wantNumber, ok := number(desired); ok {
		haveNumber, ok := number(live)
		return ok && haveNumber == wantNumber
	}
	return reflect.DeepEqual(live, desired)
}

// empty reports whether a desired value is one the API server would not keep.
func empty(value any) bool {
	switch v := value.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// number returns a JSON number as a float64: unstructured objects hold int64 or float64,
// as decoded, and json.Number when decoded with UseNumber.
func number(value any) (float64, bool) {
	switch v := value.(type) {
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}
