package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMain lets the test binary, which /proc/self/exe names in the tests, act as
// podrunner's hostname helper.
func TestMain(m *testing.M) {
	hostnameHelper(os.Args[1:])
	os.Exit(m.Run())
}

func TestPodHostname(t *testing.T) {
	long := strings.Repeat("a", 60) + "-bcdef"
	tests := []struct {
		name, podName, specHostname, want string
	}{
		{name: "the pod's name", podName: "scheduler-7d9f8-x2x4q", want: "scheduler-7d9f8-x2x4q"},
		{name: "spec.hostname wins", podName: "scheduler-0", specHostname: "db", want: "db"},
		{name: "cut to 63 characters", podName: strings.Repeat("a", 70), want: strings.Repeat("a", 63)},
		{name: "cut without a trailing dash", podName: strings.Repeat("a", 62) + "-b", want: strings.Repeat("a", 62)},
		{name: "63 characters stay", podName: long[:63], want: long[:63]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.podName}, Spec: corev1.PodSpec{Hostname: tt.specHostname}}
			if got := podHostname(pod); got != tt.want {
				t.Errorf("hostname %q, want %q", got, tt.want)
			}
		})
	}
}

// startUnderHostname starts command as podrunner starts a pod's process, skipping the test
// where the process cannot get a UTS namespace of its own.
func startUnderHostname(t *testing.T, hostname string, command ...string) (pid int, wait func() (*os.ProcessState, string)) {
	t.Helper()
	return startInPodNamespaces(t, &processSpec{command: command, hostname: hostname, env: []string{"PATH=/usr/bin:/bin"}})
}

// startInPodNamespaces starts spec as podrunner starts a pod's process, skipping the test
// where the process cannot get namespaces of its own.
func startInPodNamespaces(t *testing.T, spec *processSpec) (pid int, wait func() (*os.ProcessState, string)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: giving a process its own hostname needs root (CAP_SYS_ADMIN for a UTS namespace); run the tests as root")
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "process.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	r := &runner{}
	process, err := r.startProcess(spec, logFile)
	if err != nil {
		t.Fatal(err)
	}
	// Safe after Wait too: os.Process does not signal a process it has reaped.
	t.Cleanup(func() { _ = process.Process.Kill() })
	if r.noUTSNamespace.Load() {
		_ = process.Process.Kill()
		_ = process.Wait()
		t.Skip("skipped: this root may not make a UTS namespace (no CAP_SYS_ADMIN); run the tests as a privileged root")
	}
	return process.Process.Pid, func() (*os.ProcessState, string) {
		err := process.Wait()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatal(err)
		}
		output, err := os.ReadFile(logFile.Name())
		if err != nil {
			t.Fatal(err)
		}
		return process.ProcessState, string(output)
	}
}

func TestProcessRunsUnderThePodsHostname(t *testing.T) {
	hostHostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	_, wait := startUnderHostname(t, "scheduler-7d9f8-x2x4q", "/bin/hostname")
	if state, output := wait(); !state.Success() || output != "scheduler-7d9f8-x2x4q\n" {
		t.Errorf("/bin/hostname: %v, printed %q, want scheduler-7d9f8-x2x4q", state, output)
	}
	if after, _ := os.Hostname(); after != hostHostname {
		t.Errorf("the host's hostname became %q, want it left %q", after, hostHostname)
	}
}

func TestPidIsTheProgramsOwn(t *testing.T) {
	pid, wait := startUnderHostname(t, "manager-abc", "/bin/sh", "-c", `echo "$$ $(hostname)"`)
	if state, output := wait(); !state.Success() || output != fmt.Sprintf("%d manager-abc\n", pid) {
		t.Errorf("sh printed %q (%v), want %q: its pid is the one podrunner started", output, state, fmt.Sprintf("%d manager-abc\n", pid))
	}
}

func TestSignalsReachTheProgram(t *testing.T) {
	tests := []struct {
		name   string
		signal func(pid int) error
		want   syscall.Signal
	}{
		// As tests simulate a crash.
		{name: "SIGKILL to the pid", signal: func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }, want: syscall.SIGKILL},
		// As terminate stops a pod.
		{name: "SIGTERM to the process group", signal: func(pid int) error { return syscall.Kill(-pid, syscall.SIGTERM) }, want: syscall.SIGTERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, wait := startUnderHostname(t, "scheduler-0", "/bin/sleep", "60")
			// Once the helper has exec'd sleep, the pid is sleep's.
			deadline := time.Now().Add(5 * time.Second)
			for comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); string(comm) != "sleep\n"; comm, _ = os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)) {
				if time.Now().After(deadline) {
					t.Fatalf("pid %d is %q, not sleep, after 5s", pid, comm)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := tt.signal(pid); err != nil {
				t.Fatal(err)
			}
			state, _ := wait()
			if status, ok := state.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != tt.want {
				t.Errorf("sleep ended %v, want killed by %v", state, tt.want)
			}
		})
	}
}

func TestProcessSeesTheClustersServiceNames(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("10.1.0.7 prometheus-operated.monitoring.svc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	_, wait := startInPodNamespaces(t, &processSpec{command: []string{"/bin/cat", "/etc/hosts"}, hostname: "manager-abc", hosts: hosts,
		env: []string{"PATH=/usr/bin:/bin"}})
	if state, output := wait(); !state.Success() || output != "10.1.0.7 prometheus-operated.monitoring.svc\n" {
		t.Errorf("cat /etc/hosts: %v, printed %q, want the pod's hosts file", state, output)
	}
	if after, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(after, hostHosts) {
		t.Errorf("the host's /etc/hosts became %q, want it left as it was", after)
	}
}

// TestProcessSeesItsServiceAccountDirectory: a volume mounted at the ServiceAccount path is
// there for the process, which reads it by that path, and the host is left without it.
func TestProcessSeesItsServiceAccountDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("the scheduler's Prometheus CA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hostHad := os.Stat(serviceAccountPath)
	_, wait := startInPodNamespaces(t, &processSpec{command: []string{"/bin/cat", serviceAccountPath + "/ca.crt"}, hostname: "descheduler-0",
		serviceAccountDir: dir, env: []string{"PATH=/usr/bin:/bin"}})
	if state, output := wait(); !state.Success() || output != "the scheduler's Prometheus CA\n" {
		t.Errorf("cat %s/ca.crt: %v, printed %q, want the volume's file", serviceAccountPath, state, output)
	}
	if _, hostHas := os.Stat(serviceAccountPath); (hostHad == nil) != (hostHas == nil) {
		t.Errorf("the host's %s: before %v, after %v; want it left as it was", serviceAccountPath, hostHad, hostHas)
	}
}
