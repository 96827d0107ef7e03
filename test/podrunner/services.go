package main

import (
	"context"
	"regexp"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/clusterdial"
)

// serviceHost matches a Service's cluster DNS name with an optional port:
// name.namespace.svc, name.namespace.svc.cluster.local, then :port.
var serviceHost = regexp.MustCompile(`\b([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.cluster\.local)?(:([0-9]{1,5}))?\b`)

// resolveServiceHosts rewrites Service host names in a file the way cluster networking
// would route them: to a ready endpoint of the Service, from its EndpointSlices, with the
// Service port translated to the endpoint's port. Names it cannot resolve stay as they are.
func resolveServiceHosts(ctx context.Context, reader client.Reader, content []byte) []byte {
	return serviceHost.ReplaceAllFunc(content, func(match []byte) []byte {
		groups := serviceHost.FindSubmatch(match)
		name, namespace, port := string(groups[1]), string(groups[3]), string(groups[7])
		address, err := clusterdial.ServiceEndpoint(ctx, reader, namespace, name, port)
		if err != nil {
			return match
		}
		return []byte(address)
	})
}
