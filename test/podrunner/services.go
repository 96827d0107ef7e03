package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// serviceHost matches a Service's cluster DNS name with an optional port:
// name.namespace.svc, name.namespace.svc.cluster.local, then :port.
var serviceHost = regexp.MustCompile(`\b([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.cluster\.local)?(:([0-9]{1,5}))?\b`)

// resolveServiceHosts rewrites Service host names in a file the way cluster networking
// would route them: to a ready endpoint of the Service, from its EndpointSlices, with the
// Service port translated to the endpoint's port. Names it cannot resolve stay as they are.
func resolveServiceHosts(ctx context.Context, clientset kubernetes.Interface, content []byte) []byte {
	return serviceHost.ReplaceAllFunc(content, func(match []byte) []byte {
		groups := serviceHost.FindSubmatch(match)
		name, namespace, port := string(groups[1]), string(groups[3]), string(groups[7])
		address, err := serviceEndpoint(ctx, clientset, namespace, name, port)
		if err != nil {
			return match
		}
		return []byte(address)
	})
}

// serviceEndpoint returns host:port of a ready endpoint of a Service, or the host alone
// when no port is asked for.
func serviceEndpoint(ctx context.Context, clientset kubernetes.Interface, namespace, name, servicePort string) (string, error) {
	service, err := clientset.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	portName, wantPort := "", servicePort != ""
	for _, port := range service.Spec.Ports {
		if strconv.Itoa(int(port.Port)) == servicePort {
			portName = port.Name
		}
	}
	slices, err := clientset.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return "", err
	}
	for _, slice := range slices.Items {
		for _, endpoint := range slice.Endpoints {
			if endpoint.Conditions.Ready != nil && !*endpoint.Conditions.Ready || len(endpoint.Addresses) == 0 {
				continue
			}
			if !wantPort {
				return endpoint.Addresses[0], nil
			}
			for _, port := range slice.Ports {
				if port.Port != nil && (port.Name == nil && portName == "" || port.Name != nil && *port.Name == portName) {
					return net.JoinHostPort(endpoint.Addresses[0], strconv.Itoa(int(*port.Port))), nil
				}
			}
		}
	}
	return "", fmt.Errorf("service %s/%s has no ready endpoint for port %q", namespace, name, servicePort)
}
