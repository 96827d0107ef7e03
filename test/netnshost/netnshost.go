// Package netnshost makes a test host in its own Linux network namespace with iproute2,
// so that a server in it (a real Prometheus) is reachable the way a pod is: on a
// non-loopback address that a Service's EndpointSlice can name. The API server rejects
// loopback endpoint addresses, so a server on 127.0.0.1 cannot stand in for a pod.
//
// The namespace is joined to the root namespace by a veth pair on 10.213.<subnet>.0/24:
// the root side holds .1 (where the root namespace can listen for the host's clients)
// and the namespace side, named eth0 as in a pod, holds .2. Making one needs root.
package netnshost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// Host is a network namespace joined to the root namespace by a veth pair.
type Host struct {
	// Name is the network namespace's name, as `ip netns` lists it.
	Name string
	// Address is the namespace side's IP, for example 10.213.7.2: where servers run by
	// Command listen, and what an EndpointSlice names.
	Address string
	// HostAddress is the root namespace side's IP, for example 10.213.7.1. Servers in the
	// root namespace listen here to be reachable from the namespace; it is also the
	// namespace's default gateway.
	HostAddress string
	// Link is the root namespace side's interface name.
	Link string

	closeOnce sync.Once
	closeErr  error
}

// podLink is the namespace side's interface name; a pod's interface is eth0 too.
const podLink = "eth0"

// New creates the network namespace name with a veth pair on 10.213.<subnetIndex>.0/24,
// both ends and the namespace's loopback up. A namespace of the same name, or a link of
// the same subnet, left over from a killed earlier run is removed first, along with the
// processes still running in that namespace. Hosts that exist at the same time need
// distinct names and subnet indexes.
func New(name string, subnetIndex int) (*Host, error) {
	if subnetIndex < 0 || subnetIndex > 255 {
		return nil, fmt.Errorf("create network namespace %s: subnet index %d is not in 0..255", name, subnetIndex)
	}
	// The link is named after the subnet, not the namespace, because interface names are
	// limited to 15 characters and two hosts on one subnet could not coexist anyway.
	host := &Host{
		Name:        name,
		Address:     fmt.Sprintf("10.213.%d.2", subnetIndex),
		HostAddress: fmt.Sprintf("10.213.%d.1", subnetIndex),
		Link:        fmt.Sprintf("nsh%d", subnetIndex),
	}
	if err := host.removeLeftovers(); err != nil {
		return nil, fmt.Errorf("create network namespace %s: remove leftover of an earlier run: %w", name, err)
	}
	steps := [][]string{
		{"netns", "add", name},
		{"link", "add", host.Link, "type", "veth", "peer", "name", podLink, "netns", name},
		{"address", "add", host.HostAddress + "/24", "dev", host.Link},
		{"link", "set", host.Link, "up"},
		{"-netns", name, "address", "add", host.Address + "/24", "dev", podLink},
		{"-netns", name, "link", "set", podLink, "up"},
		{"-netns", name, "link", "set", "lo", "up"},
		// Like a pod, the namespace reaches the rest of the host through its gateway.
		{"-netns", name, "route", "add", "default", "via", host.HostAddress},
	}
	for _, step := range steps {
		if err := runIP(step...); err != nil {
			// Do not leave half a host behind for the next run to trip over.
			_ = host.Close()
			return nil, fmt.Errorf("create network namespace %s: %w", name, err)
		}
	}
	return host, nil
}

// Command returns a command that runs program with args inside the namespace, stopped
// when ctx ends. `ip netns exec` replaces itself with program, so killing the command
// kills program.
func (h *Host) Command(ctx context.Context, program string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, program}, args...)...)
}

// Close deletes the veth pair and the namespace. Address stops answering at once, even
// while processes started by Command still run (they are the caller's to stop). Calling
// Close again does nothing and returns the first result.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.closeErr = h.remove()
		if h.closeErr != nil {
			h.closeErr = fmt.Errorf("delete network namespace %s: %w", h.Name, h.closeErr)
		}
	})
	return h.closeErr
}

// remove deletes what exists of the link and the namespace.
func (h *Host) remove() error {
	var errs []error
	// Deleting one end of a veth pair deletes both. The link goes first: a namespace whose
	// name is deleted lives on while a process is in it, and so would its interfaces.
	if linkExists(h.Link) {
		errs = append(errs, runIP("link", "delete", h.Link))
	}
	exists, err := namespaceExists(h.Name)
	if err != nil {
		errs = append(errs, err)
	} else if exists {
		errs = append(errs, runIP("netns", "delete", h.Name))
	}
	return errors.Join(errs...)
}

// removeLeftovers removes a namespace and link of h's names that a killed earlier run
// could not, and kills the processes in that namespace, such as an orphaned Prometheus:
// with the namespace's name gone they would run on, unreachable and unstoppable by name.
func (h *Host) removeLeftovers() error {
	exists, err := namespaceExists(h.Name)
	if err != nil {
		return err
	}
	if exists {
		output, err := ipOutput("netns", "pids", h.Name)
		if err != nil {
			return err
		}
		for _, field := range strings.Fields(output) {
			var pid int
			if _, err := fmt.Sscan(field, &pid); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return h.remove()
}

// linkExists reports whether the root namespace has an interface called name.
func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

// namespaceExists reports whether `ip netns` lists a namespace called name.
func namespaceExists(name string) (bool, error) {
	output, err := ipOutput("netns", "list")
	if err != nil {
		return false, err
	}
	// Lines read "name" or "name (id: 3)".
	for line := range strings.Lines(output) {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == name {
			return true, nil
		}
	}
	return false, nil
}

// runIP runs iproute2's ip with args.
func runIP(args ...string) error {
	_, err := ipOutput(args...)
	return err
}

// ipOutput runs iproute2's ip with args and returns its standard output. A failure names
// the subcommand and carries ip's standard error, which says what went wrong.
func ipOutput(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	command := exec.Command("ip", args...)
	command.Stdout, command.Stderr = &stdout, &stderr
	if err := command.Run(); err != nil {
		message := strings.TrimSpace(stderr.String())
		if message == "" {
			message = err.Error()
		}
		if os.Geteuid() != 0 {
			message += ": are you root?"
		}
		return "", fmt.Errorf("ip %s: %s", strings.Join(subcommand(args), " "), message)
	}
	return stdout.String(), nil
}

// subcommand returns the words of args that name the operation, such as "netns add" or
// "-netns ssop-prom link set", leaving out the operands.
func subcommand(args []string) []string {
	if len(args) >= 2 && args[0] == "-netns" {
		return append([]string{"-netns", args[1]}, subcommand(args[2:])...)
	}
	if len(args) > 2 {
		return args[:2]
	}
	return args
}
