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
// read a custom kind, once per kind, when such a scheduler is reconciled
// (OneLookPerGroupVersion: once per group and version).
func DiscoveredKinds(resources discovery.ServerResourcesInterface) ServedKinds {
	return discoveredKinds{resources: resources}
}

type discoveredKinds struct {
	resources discovery.ServerResourcesInterface
	// looked, when not nil, keeps what discovery answered for each group and version
	// (nil for one it does not serve), so that it is asked once (OneLookPerGroupVersion).
	looked map[schema.GroupVersion][]metav1.APIResource
}

// OneLookPerGroupVersion is kinds asking discovery at most once per group and version for
// as long as it is used: for one reconcile, so that kinds of one group and version (PodGroup
// and ElasticQuota) cost one request, while the next reconcile still sees a CRD installed
// since. Not safe for concurrent use; kinds other than DiscoveredKinds' are returned as
// they are.
func OneLookPerGroupVersion(kinds ServedKinds) ServedKinds {
	if discovered, ok := kinds.(discoveredKinds); ok {
		return discoveredKinds{resources: discovered.resources, looked: map[schema.GroupVersion][]metav1.APIResource{}}
	}
	return kinds
}

func (d discoveredKinds) Serves(kind schema.GroupVersionKind) (bool, error) {
	resources, err := d.groupVersion(kind.GroupVersion())
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(resources, func(resource metav1.APIResource) bool {
		return resource.Kind == kind.Kind && !strings.Contains(resource.Name, "/") // not a subresource
	}), nil
}

// groupVersion are the resources the API server serves at groupVersion, none when it
// does not serve it.
func (d discoveredKinds) groupVersion(groupVersion schema.GroupVersion) ([]metav1.APIResource, error) {
	if resources, ok := d.looked[groupVersion]; ok {
		return resources, nil
	}
	served, err := d.resources.ServerResourcesForGroupVersion(groupVersion.String())
	var resources []metav1.APIResource
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("discover %s: %w", groupVersion, err)
	default:
		resources = served.APIResources
	}
	if d.looked != nil {
		d.looked[groupVersion] = resources
	}
	return resources, nil
}

// noKinds serves no kind: the ServedKinds of a Gatherer configured without one.
type noKinds struct{}

func (noKinds) Serves(schema.GroupVersionKind) (bool, error) { return false, nil }
