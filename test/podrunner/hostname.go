package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// execAsHostnameFlag makes podrunner the helper that starts a pod's process under the
// pod's hostname, with the cluster's Service names in its /etc/hosts when a file of them is
// given, and with a directory at the ServiceAccount path when one is given:
// podrunner --exec-as-hostname NAME [--hosts FILE] [--service-account-dir DIR] -- BINARY [ARGS...].
const execAsHostnameFlag = "--exec-as-hostname"

// hostsFlag names the helper's hosts file, which it mounts over /etc/hosts.
const hostsFlag = "--hosts"

// serviceAccountDirFlag names the helper's directory that it mounts at serviceAccountPath.
const serviceAccountDirFlag = "--service-account-dir"

// serviceAccountPath is where a pod's programs find the cluster's CA and their token
// without being told: client-go's in-cluster configuration reads it, and so does the
// descheduler's Prometheus client (its CA, by that fixed path). A volume mounted there
// cannot be moved by rewriting arguments, so the helper mounts it there, in the process's
// mount namespace.
const serviceAccountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// selfExecutable is podrunner's own binary, for the helper; it stays valid when the file
// on disk is replaced by a rebuild.
const selfExecutable = "/proc/self/exe"

// hostnameMaxLength is the longest hostname the kubelet gives a pod.
const hostnameMaxLength = 63

// podHostname is the hostname the kubelet gives a pod: spec.hostname, else the pod's name,
// cut to 63 characters without a trailing '-' or '.'.
func podHostname(pod *corev1.Pod) string {
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	if len(hostname) <= hostnameMaxLength {
		return hostname
	}
	return strings.TrimRight(hostname[:hostnameMaxLength], "-.")
}

// startProcess starts spec's command, its output to logFile, in a process group of its
// own and under the pod's hostname, in a UTS namespace of its own; with spec.hosts or
// spec.serviceAccountDir, also in a mount namespace of its own whose /etc/hosts is that file
// and whose ServiceAccount path is that directory. Where podrunner may not make
// them (it is not root), the process keeps the host's hostname and /etc/hosts, and
// podrunner warns once.
func (r *runner) startProcess(spec *processSpec, logFile *os.File) (*exec.Cmd, error) {
	if !r.noUTSNamespace.Load() {
		process := newProcess(hostnameCommand(spec.hostname, spec.hosts, spec.serviceAccountDir, spec.command), spec.env, logFile)
		err := inNewNamespaces(process.SysProcAttr, spec.hosts != "" || spec.serviceAccountDir != "")
		if err == nil {
			err = process.Start()
		}
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
			return process, err
		}
		r.noUTSNamespace.Store(true)
		r.utsWarning.Do(func() {
			klog.Warningf("pods' processes keep the host's hostname and /etc/hosts, as podrunner cannot give them UTS and mount namespaces of their own (that needs root, on Linux): %v", err)
		})
	}
	process := newProcess(spec.command, spec.env, logFile)
	return process, process.Start()
}

func newProcess(command, env []string, logFile *os.File) *exec.Cmd {
	process := exec.Command(command[0], command[1:]...)
	process.Env = env
	process.Stdout, process.Stderr = logFile, logFile
	// A group of its own, which terminate signals as a whole.
	process.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return process
}

// hostnameCommand runs command through podrunner's hostname helper, with the hosts file
// hosts and the ServiceAccount directory serviceAccountDir when they are not empty.
func hostnameCommand(hostname, hosts, serviceAccountDir string, command []string) []string {
	helper := []string{selfExecutable, execAsHostnameFlag, hostname}
	if hosts != "" {
		helper = append(helper, hostsFlag, hosts)
	}
	if serviceAccountDir != "" {
		helper = append(helper, serviceAccountDirFlag, serviceAccountDir)
	}
	return slices.Concat(helper, []string{"--"}, command)
}

// hostnameHelper runs podrunner as the hostname helper when its arguments, args, ask for
// it, and returns only when they do not.
func hostnameHelper(args []string) {
	if len(args) == 0 || args[0] != execAsHostnameFlag {
		return
	}
	err := fmt.Errorf("usage: podrunner %s NAME [%s FILE] [%s DIR] -- BINARY [ARGS...]", execAsHostnameFlag, hostsFlag, serviceAccountDirFlag)
	if len(args) >= 2 && args[1] != "" {
		hostname, hosts, serviceAccountDir, rest := args[1], "", "", args[2:]
		if len(rest) >= 2 && rest[0] == hostsFlag && rest[1] != "" {
			hosts, rest = rest[1], rest[2:]
		}
		if len(rest) >= 2 && rest[0] == serviceAccountDirFlag && rest[1] != "" {
			serviceAccountDir, rest = rest[1], rest[2:]
		}
		if len(rest) >= 2 && rest[0] == "--" {
			err = execAsHostname(hostname, hosts, serviceAccountDir, rest[1:])
		}
	}
	// The process's log shows why the pod's process did not start.
	fmt.Fprintf(os.Stderr, "podrunner %s: %v\n", execAsHostnameFlag, err)
	os.Exit(127)
}

// execAsHostname names the host, which in the helper's UTS namespace is the process's
// alone, mounts hosts (when not empty) over /etc/hosts and serviceAccountDir (when not
// empty) at serviceAccountPath, which in the helper's mount namespace only the process
// sees, and replaces the helper with command, which so keeps the pid podrunner started and
// wrote to the pid file. It returns only on failure.
func execAsHostname(hostname, hosts, serviceAccountDir string, command []string) error {
	if err := setHostname(hostname); err != nil {
		return fmt.Errorf("set hostname %s: %w", hostname, err)
	}
	if hosts != "" {
		// Only a process that dials Service names needs them: one that cannot have them
		// still runs, and its log says why names may not resolve.
		if err := mountHosts(hosts); err != nil {
			fmt.Fprintf(os.Stderr, "podrunner %s: the process keeps the host's /etc/hosts, without the cluster's Service names: mount %s: %v\n", execAsHostnameFlag, hosts, err)
		}
	}
	if serviceAccountDir != "" {
		// A program that reads this path by itself cannot run as the pod would without it.
		if err := mountServiceAccountDir(serviceAccountDir); err != nil {
			return fmt.Errorf("mount %s at %s: %w", serviceAccountDir, serviceAccountPath, err)
		}
	}
	binary, err := exec.LookPath(command[0])
	if err != nil {
		return err
	}
	return syscall.Exec(binary, command, os.Environ())
}
