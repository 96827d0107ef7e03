package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

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

// hostPortPool hands out the host ports that stand for the containers' declared ports,
// from below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where no socket
// gets a port without asking for its number. A port checked free there stays free until
// the process binds it: no other process's outgoing connection or listener on ":0" can
// take it meanwhile, as one could a port picked with ":0" and closed. A port stays taken
// until its pod's process is gone, so the pool's pods never share one; the search starts
// at a random port of the range, so that two podrunners on one machine seldom try the
// same ports at the same moment. What is left: a process that binds a fixed port of the
// range between the check and the bind.
type hostPortPool struct {
	mu        sync.Mutex
	low, high int // the range, both included
	next      int
	taken     map[int]bool
}

// lowestPoolPort is where the pool's range starts: above the ports that servers take by
// their well-known numbers (etcd's, the kubelet's, kube-scheduler's, Prometheus').
const lowestPoolPort = 20000

// newHostPortPool is a pool of the ports from lowestPoolPort up to the ephemeral range.
func newHostPortPool() *hostPortPool {
	high := ephemeralPortsStart() - 1
	pool := &hostPortPool{low: lowestPoolPort, high: high, taken: map[int]bool{}}
	if high-lowestPoolPort < 1000 {
		// A machine whose ephemeral range starts low leaves no room below it: the pool then
		// takes its ports from the top of the port space, above it.
		pool.low, pool.high = 61000, 65535
	}
	pool.next = pool.low + rand.IntN(pool.high-pool.low+1)
	return pool
}

// ephemeralPortsStart is the first port of the kernel's ephemeral range, Linux's
// default (32768) where it cannot be read.
func ephemeralPortsStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 32768
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return start
}

// allocate gives each container port a free port of the pool. A port is free when
// nothing listens on it, on any address, and no pod of the pool has it.
func (pool *hostPortPool) allocate(containerPorts []int32) (hostPorts, error) {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	ports := hostPorts{}
	for _, containerPort := range containerPorts {
		if _, ok := ports[containerPort]; ok {
			continue
		}
		hostPort, err := pool.takeFree()
		if err != nil {
			for _, taken := range ports {
				delete(pool.taken, taken)
			}
			return nil, fmt.Errorf("allocate a host port for container port %d: %w", containerPort, err)
		}
		ports[containerPort] = hostPort
	}
	return ports, nil
}

// takeFree takes the next free port of the range, trying each at most once.
func (pool *hostPortPool) takeFree() (int, error) {
	for range pool.high - pool.low + 1 {
		port := pool.next
		pool.next++
		if pool.next > pool.high {
			pool.next = pool.low
		}
		if pool.taken[port] || !listenable(port) {
			continue
		}
		pool.taken[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("every port from %d to %d is taken", pool.low, pool.high)
}

// listenable is whether a listener may bind port on every address, as kube-scheduler's
// --secure-port does.
func listenable(port int) bool {
	listener, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = listener.Close()
	return true
}

// release gives ports back to the pool, once the process that had them is gone.
func (pool *hostPortPool) release(ports hostPorts) {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for _, port := range ports {
		delete(pool.taken, port)
	}
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
