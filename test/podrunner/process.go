package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/hostprocess"
)

// podProcess runs the first container of one pod as a host process, restarting it
// when it exits, until stopped.
type podProcess struct {
	runner *runner
	pod    *corev1.Pod
	uid    types.UID
	dir    string

	cancel context.CancelFunc
	done   chan struct{}
}

func newPodProcess(r *runner, pod *corev1.Pod) *podProcess {
	return &podProcess{
		runner: r,
		pod:    pod.DeepCopy(),
		uid:    pod.UID,
		dir:    filepath.Join(r.workDir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)[:8]),
		done:   make(chan struct{}),
	}
}

// logPath is where the process's output goes, kept as a test artifact.
func (p *podProcess) logPath() string { return filepath.Join(p.dir, "process.log") }

func (p *podProcess) supervise(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	p.cancel = cancel
	defer close(p.done)
	key := p.pod.Namespace + "/" + p.pod.Name
	command, probe, err := p.prepare(ctx)
	if err != nil {
		klog.ErrorS(err, "cannot run pod", "pod", key)
		p.reportWaiting(ctx, "CreateContainerConfigError", err.Error())
		return
	}
	restarts := int32(0)
	for ctx.Err() == nil {
		started := time.Now()
		exitCode, err := p.runOnce(ctx, command, probe, restarts)
		if ctx.Err() != nil {
			return
		}
		klog.InfoS("process exited; restarting", "pod", key, "exitCode", exitCode, "err", err)
		restarts++
		p.reportTerminated(ctx, restarts, exitCode, started)
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// runOnce runs the process until it exits or ctx ends, keeping the pod's status.
func (p *podProcess) runOnce(ctx context.Context, command []string, probe *probeTarget, restarts int32) (int, error) {
	logFile, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return -1, err
	}
	defer func() { _ = logFile.Close() }()
	fmt.Fprintf(logFile, "==== %s podrunner starts: %s\n", time.Now().Format(time.RFC3339), strings.Join(command, " "))
	process := exec.Command(command[0], command[1:]...)
	process.Stdout, process.Stderr = logFile, logFile
	process.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := process.Start(); err != nil {
		return -1, err
	}
	// Tests find the process of a pod here, to kill it as a node failure would.
	if err := os.WriteFile(filepath.Join(p.dir, "pid"), []byte(strconv.Itoa(process.Process.Pid)), 0o644); err != nil {
		klog.ErrorS(err, "write pid file", "pod", p.pod.Namespace+"/"+p.pod.Name)
	}
	started := metav1.Now()
	exited := make(chan error, 1)
	go func() { exited <- process.Wait() }()
	ready := false
	p.reportRunning(ctx, started, restarts, ready)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case err := <-exited:
			return process.ProcessState.ExitCode(), err
		case <-ctx.Done():
			p.terminate(process, exited)
			return 0, ctx.Err()
		case <-ticker.C:
			if nowReady := probe.ready(); nowReady != ready {
				ready = nowReady
				p.reportRunning(ctx, started, restarts, ready)
			}
		}
	}
}

// terminate stops the process as a kubelet would: SIGTERM, then SIGKILL after the grace period.
func (p *podProcess) terminate(process *exec.Cmd, exited <-chan error) {
	grace := 10 * time.Second
	if p.pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*p.pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	_ = syscall.Kill(-process.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-exited:
		klog.V(2).InfoS("process ended on SIGTERM", "pod", p.pod.Namespace+"/"+p.pod.Name, "err", err)
	case <-time.After(grace):
		_ = syscall.Kill(-process.Process.Pid, syscall.SIGKILL)
		err := <-exited
		klog.V(2).InfoS("process killed after its grace period", "pod", p.pod.Namespace+"/"+p.pod.Name, "err", err)
	}
}

func (p *podProcess) stop() {
	if p.cancel != nil {
		p.cancel()
	}
	<-p.done
	klog.InfoS("pod process stopped", "pod", p.pod.Namespace+"/"+p.pod.Name)
}

// probeTarget is where the container's readiness probe reaches the process.
type probeTarget struct {
	url    string
	client *http.Client
}

func (t *probeTarget) ready() bool {
	if t == nil {
		return true
	}
	response, err := t.client.Get(t.url)
	if err != nil {
		return false
	}
	_ = response.Body.Close()
	return response.StatusCode >= 200 && response.StatusCode < 400
}

// prepare writes the pod's volumes and kubeconfig and returns the host command.
func (p *podProcess) prepare(ctx context.Context) ([]string, *probeTarget, error) {
	container := p.pod.Spec.Containers[0]
	binary := p.runner.binaryFor(container.Image)
	if binary == "" {
		return nil, nil, fmt.Errorf("no local binary for image %s; give one with --binaries", container.Image)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, nil, err
	}
	kubeconfig, err := p.writeKubeconfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	mounts, err := p.writeVolumes(ctx, container, kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	command := append([]string{binary}, rewritePaths(append(container.Command[1:], container.Args...), mounts)...)
	// In a pod these come from the in-cluster configuration and the default port.
	command = append(command, "--secure-port="+strconv.Itoa(port),
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	var probe *probeTarget
	if readiness := container.ReadinessProbe; readiness != nil && readiness.HTTPGet != nil {
		scheme := strings.ToLower(string(readiness.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		probe = &probeTarget{
			url: fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, readiness.HTTPGet.Path),
			client: &http.Client{Timeout: time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, //nolint:gosec // as kubelet probes
		}
	}
	return command, probe, nil
}

// writeKubeconfig gives the process the identity of the pod's ServiceAccount, with a
// token bound to the pod, as the kubelet's projected token would.
func (p *podProcess) writeKubeconfig(ctx context.Context) (string, error) {
	serviceAccount := p.pod.Spec.ServiceAccountName
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	token, err := p.runner.clientset.CoreV1().ServiceAccounts(p.pod.Namespace).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](24 * 3600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.pod.Name, UID: p.pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for ServiceAccount %s/%s: %w", p.pod.Namespace, serviceAccount, err)
	}
	path, err := filepath.Abs(filepath.Join(p.dir, "kubeconfig"))
	if err != nil {
		return "", err
	}
	return path, hostprocess.WriteKubeconfig(path, p.runner.apiServer, p.runner.caData, p.runner.caFile, token.Status.Token)
}

// writeVolumes writes the container's ConfigMap, Secret and emptyDir volumes and returns
// each mount path with its host directory.
func (p *podProcess) writeVolumes(ctx context.Context, container corev1.Container, kubeconfig string) (map[string]string, error) {
	volumes := map[string]corev1.Volume{}
	for _, volume := range p.pod.Spec.Volumes {
		volumes[volume.Name] = volume
	}
	mounts := map[string]string{}
	for _, mount := range container.VolumeMounts {
		hostDir, err := filepath.Abs(filepath.Join(p.dir, "volumes", mount.Name))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(hostDir, 0o755); err != nil {
			return nil, err
		}
		files, err := p.volumeFiles(ctx, volumes[mount.Name])
		if err != nil {
			return nil, err
		}
		for name, content := range files {
			content = resolveServiceHosts(ctx, p.runner.reader, content)
			content, err := hostprocess.PointAtKubeconfig(content, kubeconfig)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(hostDir, name), content, 0o600); err != nil {
				return nil, err
			}
		}
		mounts[mount.MountPath] = hostDir
	}
	return mounts, nil
}

func (p *podProcess) volumeFiles(ctx context.Context, volume corev1.Volume) (map[string][]byte, error) {
	files := map[string][]byte{}
	switch {
	case volume.ConfigMap != nil:
		configMap, err := p.runner.clientset.CoreV1().ConfigMaps(p.pod.Namespace).Get(ctx, volume.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", volume.Name, err)
		}
		for key, value := range configMap.Data {
			files[key] = []byte(value)
		}
	case volume.Secret != nil:
		secret, err := p.runner.clientset.CoreV1().Secrets(p.pod.Namespace).Get(ctx, volume.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", volume.Name, err)
		}
		for key, value := range secret.Data {
			files[key] = value
		}
	}
	return files, nil
}

// rewritePaths replaces a mount path at the start of an argument, or of its value in
// --flag=value, with its host directory; the longest mount path wins.
func rewritePaths(args []string, mounts map[string]string) []string {
	rewritten := make([]string, 0, len(args))
	for _, arg := range args {
		prefix, value := "", arg
		if flagName, flagValue, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
			prefix, value = flagName+"=", flagValue
		}
		longest := ""
		for mountPath := range mounts {
			if (value == mountPath || strings.HasPrefix(value, mountPath+"/")) && len(mountPath) > len(longest) {
				longest = mountPath
			}
		}
		if longest != "" {
			value = mounts[longest] + strings.TrimPrefix(value, longest)
		}
		rewritten = append(rewritten, prefix+value)
	}
	return rewritten
}

func (r *runner) binaryFor(image string) string {
	for _, mapping := range r.binaries {
		if strings.Contains(image, mapping.imageSubstring) {
			return mapping.path
		}
	}
	return ""
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port, nil
}
