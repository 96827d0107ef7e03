package gather

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServedKinds tells whether the API server serves a kind.
type ServedKinds interface {
	// Serves reports whether the API server serves kind at its version; an error is a
	// failure to find out, to be retried.
	Serves(kind schema.GroupVersionKind) (bool, error)
}

// servedKinds looks kinds up in a RESTMapper. The operator's maps discovery lazily and
// asks the API server again for a group or version it does not know, so a CRD installed
// since the last look is found (and a kind not served costs a discovery request each time
// it is asked for: only for a configuration that needs it, at the pace of a polled
// refusal).
type servedKinds struct {
	mapper meta.RESTMapper
}

func (s servedKinds) Serves(kind schema.GroupVersionKind) (bool, error) {
	if _, err := s.mapper.RESTMapping(kind.GroupKind(), kind.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("look up kind %s: %w", kind, err)
	}
	return true, nil
}
