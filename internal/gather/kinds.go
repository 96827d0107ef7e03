package gather

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// ServedKinds tells whether the API server serves a kind.
type ServedKinds interface {
	// Serves reports whether the API server serves kind at its version; an error is a
	// failure to find out, to be retried.
	Serves(kind schema.GroupVersionKind) (bool, error)
}

// DiscoveredKinds asks the API server's discovery each time, for the kind's group and
// version: a CRD installed or deleted since the last look is seen at once, which a
// RESTMapper's cache would not tell. It is asked only for a configuration whose plugins
// read a custom kind, once per kind, when such a scheduler is reconciled.
func DiscoveredKinds(resources discovery.ServerResourcesInterface) ServedKinds {
	return discoveredKinds{resources}
}

type discoveredKinds struct {
	resources discovery.ServerResourcesInterface
}

func (d discoveredKinds) Serves(kind schema.GroupVersionKind) (bool, error) {
	served, err := d.resources.ServerResourcesForGroupVersion(kind.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", kind.GroupVersion(), err)
	}
	return slices.ContainsFunc(served.APIResources, func(resource metav1.APIResource) bool {
		return resource.Kind == kind.Kind && !strings.Contains(resource.Name, "/") // not a subresource
	}), nil
}

// noKinds serves no kind: the ServedKinds of a Gatherer configured without one.
type noKinds struct{}

func (noKinds) Serves(schema.GroupVersionKind) (bool, error) { return false, nil }
