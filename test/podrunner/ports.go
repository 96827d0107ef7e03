package main

import (
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// hostPorts maps each port a container declares to the host port that stands for it: the
// pods on this host share its loopback, so two pods declaring the same port cannot both
// listen on it.
type hostPorts map[int32]int

// containerPorts lists the ports the container declares: its ports, the ports its httpGet
// probes reach (by number or by name), and kube-scheduler's default secure port, which its
// probes reach without it being declared anywhere else.
func containerPorts(container corev1.Container) ([]int32, error) {
	ports := make([]int32, 0, len(container.Ports)+4)
	for _, port := range container.Ports {
		ports = append(ports, port.ContainerPort)
	}
	for _, probe := range []*corev1.Probe{container.ReadinessProbe, container.LivenessProbe, container.StartupProbe} {
		if probe == nil || probe.HTTPGet == nil {
			continue
		}
		port, err := probePort(container, probe.HTTPGet.Port)
		if err != nil {
			return nil, err
		}
		ports = append(ports, port)
	}
	if isKubeScheduler(container) {
		ports = append(ports, kubeSchedulerSecurePort)
	}
	return ports, nil
}

// probePort is the container port a probe's port stands for, a number or the name of one
// of the container's ports.
func probePort(container corev1.Container, port intstr.IntOrString) (int32, error) {
	if port.Type == intstr.Int {
		return port.IntVal, nil
	}
	for _, declared := range container.Ports {
		if declared.Name == port.StrVal {
			return declared.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("probe port %q names none of the container's ports", port.StrVal)
}

// allocateHostPorts gives each container port a free port on the host's loopback. The
// listeners stay open until all are chosen, so that no two container ports get the same one.
func allocateHostPorts(containerPorts []int32) (hostPorts, error) {
	ports := hostPorts{}
	for _, containerPort := range containerPorts {
		if _, ok := ports[containerPort]; ok {
			continue
		}
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("allocate a host port for container port %d: %w", containerPort, err)
		}
		defer func() { _ = listener.Close() }()
		ports[containerPort] = listener.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// hostAddress moves an address on a declared port (:PORT, 0.0.0.0:PORT, HOST:PORT) to that
// port's host port on loopback; any other value stays as it is.
func (ports hostPorts) hostAddress(value string) string {
	_, portText, err := net.SplitHostPort(value)
	if err != nil {
		return value
	}
	containerPort, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return value
	}
	hostPort, ok := ports[int32(containerPort)]
	if !ok {
		return value
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort))
}
