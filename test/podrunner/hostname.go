package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// execAsHostnameFlag makes podrunner the helper that starts a pod's process under the
// pod's hostname: podrunner --exec-as-hostname NAME -- BINARY [ARGS...].
const execAsHostnameFlag = "--exec-as-hostname"

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
// own and under the pod's hostname, in a UTS namespace of its own. Where podrunner may
// not make one (it is not root), the process keeps the host's hostname, and podrunner
// warns once.
func (r *runner) startProcess(spec *processSpec, logFile *os.File) (*exec.Cmd, error) {
	if !r.noUTSNamespace.Load() {
		process := newProcess(hostnameCommand(spec.hostname, spec.command), spec.env, logFile)
		err := inNewUTSNamespace(process.SysProcAttr)
		if err == nil {
			err = process.Start()
		}
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
			return process, err
		}
		r.noUTSNamespace.Store(true)
		r.utsWarning.Do(func() {
			klog.Warningf("pods' processes keep the host's hostname, as podrunner cannot give them a UTS namespace of their own (that needs root, on Linux): %v", err)
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

// hostnameCommand runs command through podrunner's hostname helper.
func hostnameCommand(hostname string, command []string) []string {
	return append([]string{selfExecutable, execAsHostnameFlag, hostname, "--"}, command...)
}

// hostnameHelper runs podrunner as the hostname helper when its arguments, args, ask for
// it, and returns only when they do not.
func hostnameHelper(args []string) {
	if len(args) == 0 || args[0] != execAsHostnameFlag {
		return
	}
	err := fmt.Errorf("usage: podrunner %s NAME -- BINARY [ARGS...]", execAsHostnameFlag)
	if len(args) >= 4 && args[1] != "" && args[2] == "--" {
		err = execAsHostname(args[1], args[3:])
	}
	// The process's log shows why the pod's process did not start.
	fmt.Fprintf(os.Stderr, "podrunner %s: %v\n", execAsHostnameFlag, err)
	os.Exit(127)
}

// execAsHostname names the host, which in the helper's UTS namespace is the process's
// alone, and replaces the helper with command, which so keeps the pid podrunner started
// and wrote to the pid file. It returns only on failure.
func execAsHostname(hostname string, command []string) error {
	if err := setHostname(hostname); err != nil {
		return fmt.Errorf("set hostname %s: %w", hostname, err)
	}
	binary, err := exec.LookPath(command[0])
	if err != nil {
		return err
	}
	return syscall.Exec(binary, command, os.Environ())
}
