// Package clusterdial dials a Service's cluster DNS name the way cluster networking would
// route it, for an operator that runs outside the cluster (make run, the end-to-end
// tests): when the resolver does not know name.namespace.svc, it dials a ready endpoint
// of the Service from its EndpointSlices instead. Inside a cluster the resolver knows the
// name and nothing changes. TLS still verifies the Service name, which the HTTP client
// takes from the URL, not from the address dialed.
package clusterdial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serviceHost matches a Service's cluster DNS name: name.namespace.svc, optionally
// followed by .cluster.local.
var serviceHost = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.cluster\.local)?\.?$`)

// Dialer dials TCP addresses, falling back to EndpointSlices for Service names.
type Dialer struct {
	// Reader reads Services and EndpointSlices.
	Reader client.Reader
	// Net dials the address, resolved or not.
	Net net.Dialer
}

// DialContext is net.Dialer's DialContext with the Service fallback.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	groups := serviceHost.FindStringSubmatch(host)
	if groups == nil {
		return d.Net.DialContext(ctx, network, address)
	}
	connection, dialErr := d.Net.DialContext(ctx, network, address)
	var dnsErr *net.DNSError
	if dialErr == nil || !errors.As(dialErr, &dnsErr) {
		return connection, dialErr
	}
	endpoint, err := ServiceEndpoint(ctx, d.Reader, groups[3], groups[1], port)
	if err != nil {
		return nil, fmt.Errorf("%w; outside the cluster, through its EndpointSlices: %w", dialErr, err)
	}
	return d.Net.DialContext(ctx, network, endpoint)
}

// ServiceEndpoint returns host:port of a ready endpoint of Service namespace/name for its
// port servicePort (a number), translating it to the endpoint's port; with servicePort
// empty, the host alone.
func ServiceEndpoint(ctx context.Context, reader client.Reader, namespace, name, servicePort string) (string, error) {
	service := &corev1.Service{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, service); err != nil {
		return "", fmt.Errorf("read Service %s/%s: %w", namespace, name, err)
	}
	portName, wantPort := "", servicePort != ""
	for _, port := range service.Spec.Ports {
		if strconv.Itoa(int(port.Port)) == servicePort {
			portName = port.Name
		}
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return "", fmt.Errorf("list EndpointSlices of Service %s/%s: %w", namespace, name, err)
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
