package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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

// hostsFile is /etc/hosts for a pod's process: the host's own lines, then each Service's
// DNS names (name.namespace.svc and name.namespace.svc.cluster.local) on each ready
// endpoint's address, as cluster DNS answers for a headless Service. Since a host name
// cannot translate ports as a Service's cluster IP would, an endpoint is listed only when
// it serves each of the Service's ports on the same number; ExternalName Services not at
// all.
func hostsFile(ctx context.Context, reader client.Reader, hostHosts []byte) ([]byte, error) {
	services := &corev1.ServiceList{}
	if err := reader.List(ctx, services); err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	endpointSlices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, endpointSlices); err != nil {
		return nil, fmt.Errorf("list EndpointSlices: %w", err)
	}
	slicesOf := map[types.NamespacedName][]discoveryv1.EndpointSlice{}
	for _, slice := range endpointSlices.Items {
		service := types.NamespacedName{Namespace: slice.Namespace, Name: slice.Labels[discoveryv1.LabelServiceName]}
		slicesOf[service] = append(slicesOf[service], slice)
	}
	content := bytes.NewBuffer(slices.Clone(hostHosts))
	if len(hostHosts) > 0 && !bytes.HasSuffix(hostHosts, []byte("\n")) {
		content.WriteByte('\n')
	}
	content.WriteString("# The cluster's Services, written by podrunner\n")
	for _, service := range services.Items {
		if service.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		name := service.Name + "." + service.Namespace + ".svc"
		for _, slice := range slicesOf[types.NamespacedName{Namespace: service.Namespace, Name: service.Name}] {
			if !servesPortsUnchanged(&service, &slice) {
				continue
			}
			for _, endpoint := range slice.Endpoints {
				if endpoint.Conditions.Ready == nil || *endpoint.Conditions.Ready {
					for _, address := range endpoint.Addresses {
						fmt.Fprintf(content, "%s %s %s.cluster.local\n", address, name, name)
					}
				}
			}
		}
	}
	return content.Bytes(), nil
}

// servesPortsUnchanged is whether slice's endpoints serve each of service's ports on the
// same number, so that a client dialing an endpoint's address on the Service's port
// reaches what the Service would route it to.
func servesPortsUnchanged(service *corev1.Service, slice *discoveryv1.EndpointSlice) bool {
	for _, servicePort := range service.Spec.Ports {
		if !slices.ContainsFunc(slice.Ports, func(port discoveryv1.EndpointPort) bool {
			return ptr.Deref(port.Name, "") == servicePort.Name && ptr.Deref(port.Port, 0) == servicePort.Port
		}) {
			return false
		}
	}
	return true
}
