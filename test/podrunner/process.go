package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/hostprocess"
)

// podProcess runs the first container of one pod as a host process, restarting it
// when it exits, until stopped.
type podProcess struct {
	runner   *runner
	pod      *corev1.Pod
	uid      types.UID
	nodeName string
	dir      string

	// failed is set when the pod's node fails: the process is then killed at once, as
	// losing the node would, instead of being given its grace period.
	failed atomic.Bool
	// cancel ends the context supervise runs under.
	cancel context.CancelFunc
	done   chan struct{}
	// runLogStart is where the output of the last run starts in the log file: a
	// terminated container's message is taken from its own output only.
	runLogStart int64
	// current is the run of the process now running, nil between runs: what the
	// kubelet's resource metrics measure.
	current atomic.Pointer[processRun]
}

// processRun is one run of a pod's process.
type processRun struct {
	pid     int
	started time.Time
}

func newPodProcess(r *runner, pod *corev1.Pod, cancel context.CancelFunc) *podProcess {
	return &podProcess{
		runner:   r,
		pod:      pod.DeepCopy(),
		uid:      pod.UID,
		nodeName: pod.Spec.NodeName,
		dir:      filepath.Join(r.workDir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)[:8]),
		cancel:   cancel,
		done:     make(chan struct{}),
	}
}

// errNoBinary is a pod's image that no --binaries mapping names.
var errNoBinary = errors.New("no local binary")

// takeLease plays, for a fake-ready pod, the kube-scheduler that would lead: it takes the
// Lease of the SecondaryScheduler the pod belongs to (its owner labels), for an hour, as
// kube-scheduler's identity (the pod's name, an underscore, a suffix). The operator
// reports a scheduler Available only once one of its current pods leads.
func (p *podProcess) takeLease(ctx context.Context) {
	owner := p.pod.Labels[render.LabelOwnerName]
	if owner == "" {
		return
	}
	name := render.LeaseName(&v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: p.pod.Namespace, Name: owner}})
	leases := p.runner.clientset.CoordinationV1().Leases(p.pod.Namespace)
	holder := p.pod.Name + "_fake-ready"
	// The operator applies the Lease before the Deployment: it is there, but may change
	// under the update.
	for attempt := 0; attempt < 10 && ctx.Err() == nil; attempt++ {
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &holder, ptr.To[int32](3600)
			lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
			if _, err = leases.Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
				return
			}
		}
		klog.V(2).InfoS("cannot take the Lease yet", "pod", p.pod.Namespace+"/"+p.pod.Name, "lease", name, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// logPath is where the process's output goes, kept as a test artifact.
func (p *podProcess) logPath() string { return filepath.Join(p.dir, "process.log") }

func (p *podProcess) supervise(ctx context.Context) {
	defer close(p.done)
	if p.runner.fakeReady {
		p.reportRunning(ctx, metav1.Now(), 0, true)
		p.takeLease(ctx)
		<-ctx.Done()
		return
	}
	key := p.pod.Namespace + "/" + p.pod.Name
	spec, err := p.prepare(ctx)
	// As a kubelet leaves a pod waiting for a ConfigMap or Secret it mounts (kube-root-ca.crt
	// comes a moment after its namespace), until it exists.
	for apierrors.IsNotFound(err) && ctx.Err() == nil {
		klog.V(2).InfoS("waiting for what the pod mounts", "pod", key, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		spec, err = p.prepare(ctx)
	}
	if err != nil {
		klog.ErrorS(err, "cannot run pod", "pod", key)
		// An image podrunner has no binary for is, to the pod, an image that cannot be
		// pulled, as a kubelet would report it.
		reason := "CreateContainerConfigError"
		if errors.Is(err, errNoBinary) {
			reason = "ErrImagePull"
		}
		p.reportWaiting(ctx, reason, err.Error())
		return
	}
	defer p.runner.hostPorts.release(spec.ports)
	restarts := int32(0)
	for ctx.Err() == nil {
		started := time.Now()
		exitCode, err := p.runOnce(ctx, spec, restarts)
		if ctx.Err() != nil {
			return
		}
		klog.InfoS("process exited; restarting", "pod", key, "exitCode", exitCode, "err", err)
		restarts++
		p.reportTerminated(ctx, restarts, exitCode, started, p.terminationMessage(exitCode))
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// runOnce runs the process until it exits, fails its startup or liveness probe or ctx ends, keeping
// the pod's status.
func (p *podProcess) runOnce(ctx context.Context, spec *processSpec, restarts int32) (int, error) {
	logFile, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return -1, err
	}
	defer func() { _ = logFile.Close() }()
	fmt.Fprintf(logFile, "%s%s%s%s\n", runStartPrefix, time.Now().Format(time.RFC3339), runStartMarker, strings.Join(spec.command, " "))
	if info, err := logFile.Stat(); err == nil {
		p.runLogStart = info.Size()
	}
	process, err := p.runner.startProcess(spec, logFile)
	if err != nil {
		return -1, err
	}
	// Tests find the process of a pod here, to kill it as a crash would. It is the
	// program's own pid: the hostname helper execs the program in its place.
	if err := os.WriteFile(filepath.Join(p.dir, "pid"), []byte(strconv.Itoa(process.Process.Pid)), 0o644); err != nil {
		klog.ErrorS(err, "write pid file", "pod", p.pod.Namespace+"/"+p.pod.Name)
	}
	started := metav1.Now()
	p.current.Store(&processRun{pid: process.Process.Pid, started: started.Time})
	defer p.current.Store(nil)
	exited := make(chan error, 1)
	go func() { exited <- process.Wait() }()
	probes := newProbeRun(spec.readiness, spec.liveness, spec.startup, started.Time)
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
		case now := <-ticker.C:
			if err := probes.check(now); err != nil {
				p.terminate(process, exited)
				return process.ProcessState.ExitCode(), err
			}
			if nowReady := probes.ready(now); nowReady != ready {
				ready = nowReady
				p.reportRunning(ctx, started, restarts, ready)
			}
		}
	}
}

// terminate stops the process as a kubelet would: SIGTERM, then SIGKILL after the grace
// period; on a failed node, SIGKILL at once.
func (p *podProcess) terminate(process *exec.Cmd, exited <-chan error) {
	if p.failed.Load() {
		_ = syscall.Kill(-process.Process.Pid, syscall.SIGKILL)
		err := <-exited
		klog.V(2).InfoS("process killed with its node", "pod", p.pod.Namespace+"/"+p.pod.Name, "node", p.nodeName, "err", err)
		return
	}
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
	p.cancel()
	<-p.done
	klog.InfoS("pod process stopped", "pod", p.pod.Namespace+"/"+p.pod.Name)
}

// processSpec is how a pod's container runs on the host.
type processSpec struct {
	command []string
	// hostname is the pod's, which the process sees as its host's.
	hostname string
	// hosts is the file the process sees as /etc/hosts, with the cluster's Service names;
	// empty for the host's own.
	hosts string
	// ports are the host ports of the container's declared ports, the process's until its
	// pod's supervision ends.
	ports hostPorts
	// serviceAccountDir is the host directory of the volume mounted at serviceAccountPath,
	// which the process sees there; empty when none is.
	serviceAccountDir            string
	env                          []string
	readiness, liveness, startup *httpProbe
}

// prepare writes the pod's volumes and kubeconfig and works out the host process: its
// command, environment, host ports and probes.
func (p *podProcess) prepare(ctx context.Context) (*processSpec, error) {
	container := p.pod.Spec.Containers[0]
	binary := p.runner.binaryFor(container.Image)
	if binary == "" {
		return nil, fmt.Errorf("%w for image %s; give one with --binaries", errNoBinary, container.Image)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig, err := p.writeKubeconfig(ctx)
	if err != nil {
		return nil, err
	}
	mounts, err := p.writeVolumes(ctx, container, kubeconfig)
	if err != nil {
		return nil, err
	}
	env, err := containerEnv(ctx, p.runner.clientset, p.pod, container)
	if err != nil {
		return nil, err
	}
	if mounts[serviceAccountPath] != "" {
		inCluster, err := inClusterEnv(p.runner.apiServer)
		if err != nil {
			return nil, err
		}
		env = append(inCluster, env...)
	}
	declared, err := containerPorts(container)
	if err != nil {
		return nil, err
	}
	ports, err := p.runner.hostPorts.allocate(declared)
	if err != nil {
		return nil, err
	}
	prepared := false
	defer func() {
		if !prepared {
			p.runner.hostPorts.release(ports)
		}
	}()
	hosts, err := p.writeHosts(ctx)
	if err != nil {
		return nil, err
	}
	readiness, err := newHTTPProbe(container, container.ReadinessProbe, ports)
	if err != nil {
		return nil, err
	}
	liveness, err := newHTTPProbe(container, container.LivenessProbe, ports)
	if err != nil {
		return nil, err
	}
	startup, err := newHTTPProbe(container, container.StartupProbe, ports)
	if err != nil {
		return nil, err
	}
	prepared = true
	return &processSpec{
		ports:             ports,
		command:           hostCommand(binary, container, mounts, ports, kubeconfig),
		hostname:          podHostname(p.pod),
		hosts:             hosts,
		serviceAccountDir: mounts[serviceAccountPath],
		// The container's own variables come last, so that they win over podrunner's.
		env:       append(hostEnv(kubeconfig), env...),
		readiness: readiness,
		liveness:  liveness,
		startup:   startup,
	}, nil
}

// kubeSchedulerSecurePort is where kube-scheduler serves its probes and metrics by default.
const kubeSchedulerSecurePort = 10259

// deschedulerSecurePort is where sigs.k8s.io/descheduler serves its probes and metrics by
// default.
const deschedulerSecurePort = 10258

// isDescheduler is whether the container runs sigs.k8s.io/descheduler, whose serving flags
// are kube-scheduler's.
func isDescheduler(container corev1.Container) bool {
	return len(container.Command) > 0 && filepath.Base(container.Command[0]) == "descheduler"
}

// isKubeScheduler is whether the container runs kube-scheduler, which needs in a host
// process what it takes from the cluster in a pod.
func isKubeScheduler(container corev1.Container) bool {
	return len(container.Command) > 0 && filepath.Base(container.Command[0]) == "kube-scheduler"
}

// hostCommand is the container's command as a host process: the local binary in place of
// the command's first element (or of the image's entrypoint), then the arguments with mount
// paths and addresses on declared ports moved to the host's.
func hostCommand(binary string, container corev1.Container, mounts hostMounts, ports hostPorts, kubeconfig string) []string {
	args := container.Args
	if len(container.Command) > 0 {
		args = slices.Concat(container.Command[1:], container.Args)
	}
	command := append([]string{binary}, rewriteArgs(rewriteArgs(args, mounts.hostPath), ports.hostAddress)...)
	switch {
	case isKubeScheduler(container):
		// In a pod these come from the in-cluster configuration and the default secure port.
		command = append(command, "--secure-port="+strconv.Itoa(ports[kubeSchedulerSecurePort]),
			"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	case isDescheduler(container):
		// Its default secure port, which every replica on the host would take.
		command = append(command, "--secure-port="+strconv.Itoa(ports[deschedulerSecurePort]))
	}
	return command
}

// writeHosts writes the process's /etc/hosts, with the Service names the cluster's DNS
// would resolve for a pod, as they are when the process starts.
func (p *podProcess) writeHosts(ctx context.Context) (string, error) {
	hostHosts, err := os.ReadFile("/etc/hosts")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	content, err := hostsFile(ctx, p.runner.reader, hostHosts)
	if err != nil {
		return "", fmt.Errorf("write /etc/hosts of the process: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(p.dir, "hosts"))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, content, 0o644)
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
func (p *podProcess) writeVolumes(ctx context.Context, container corev1.Container, kubeconfig string) (hostMounts, error) {
	volumes := map[string]corev1.Volume{}
	for _, volume := range p.pod.Spec.Volumes {
		volumes[volume.Name] = volume
	}
	// Every mount's directory is known before any file is written: a file may name a path
	// under another mount (a KubeSchedulerConfiguration names its extenders' certificates).
	mounts := hostMounts{}
	for _, mount := range container.VolumeMounts {
		hostDir, err := filepath.Abs(filepath.Join(p.dir, "volumes", mount.Name))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(hostDir, 0o755); err != nil {
			return nil, err
		}
		mounts[mount.MountPath] = hostDir
	}
	for _, mount := range container.VolumeMounts {
		files, err := p.volumeFiles(ctx, volumes[mount.Name])
		if err != nil {
			return nil, err
		}
		for name, content := range files {
			content = resolveServiceHosts(ctx, p.runner.reader, content)
			content = mounts.rewritePaths(content)
			content, err := hostprocess.PointAtKubeconfig(content, kubeconfig)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(mounts[mount.MountPath], name), content, 0o600); err != nil {
				return nil, err
			}
		}
	}
	return mounts, nil
}

// volumeFiles are the files of a ConfigMap or Secret volume, named by their keys, or by
// the paths of the volume's items (and then only those keys), as the kubelet writes them.
func (p *podProcess) volumeFiles(ctx context.Context, volume corev1.Volume) (map[string][]byte, error) {
	data := map[string][]byte{}
	var items []corev1.KeyToPath
	switch {
	case volume.ConfigMap != nil:
		configMap, err := p.runner.clientset.CoreV1().ConfigMaps(p.pod.Namespace).Get(ctx, volume.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", volume.Name, err)
		}
		for key, value := range configMap.Data {
			data[key] = []byte(value)
		}
		for key, value := range configMap.BinaryData {
			data[key] = value
		}
		items = volume.ConfigMap.Items
	case volume.Secret != nil:
		secret, err := p.runner.clientset.CoreV1().Secrets(p.pod.Namespace).Get(ctx, volume.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", volume.Name, err)
		}
		data = secret.Data
		items = volume.Secret.Items
	case volume.Projected != nil:
		// The pod's token comes from the kubeconfig podrunner writes, so a token source
		// has no file here; a ConfigMap or Secret source writes its items as above.
		files := map[string][]byte{}
		for i, source := range volume.Projected.Sources {
			var sourceVolume corev1.Volume
			switch {
			case source.ConfigMap != nil:
				sourceVolume.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: source.ConfigMap.LocalObjectReference, Items: source.ConfigMap.Items}
			case source.Secret != nil:
				sourceVolume.Secret = &corev1.SecretVolumeSource{SecretName: source.Secret.Name, Items: source.Secret.Items}
			default:
				continue
			}
			sourceVolume.Name = fmt.Sprintf("%s, source %d", volume.Name, i)
			sourceFiles, err := p.volumeFiles(ctx, sourceVolume)
			if err != nil {
				return nil, err
			}
			maps.Copy(files, sourceFiles)
		}
		return files, nil
	}
	if len(items) == 0 {
		return data, nil
	}
	files := map[string][]byte{}
	for _, item := range items {
		value, ok := data[item.Key]
		if !ok {
			return nil, fmt.Errorf("volume %s: no key %s", volume.Name, item.Key)
		}
		if item.Path != filepath.Base(item.Path) {
			return nil, fmt.Errorf("volume %s: item path %s in a subdirectory, which podrunner does not write", volume.Name, item.Path)
		}
		files[item.Path] = value
	}
	return files, nil
}

// rewriteArgs applies rewrite to each argument, or to its value in --flag=value.
func rewriteArgs(args []string, rewrite func(value string) string) []string {
	rewritten := make([]string, 0, len(args))
	for _, arg := range args {
		if flagName, flagValue, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
			rewritten = append(rewritten, flagName+"="+rewrite(flagValue))
		} else {
			rewritten = append(rewritten, rewrite(arg))
		}
	}
	return rewritten
}

// hostMounts maps each mount path of the container to its host directory.
type hostMounts map[string]string

// hostPath moves a path under a mount path to its host directory; the longest mount path
// wins, and any other value stays as it is.
func (mounts hostMounts) hostPath(value string) string {
	longest := ""
	for mountPath := range mounts {
		if (value == mountPath || strings.HasPrefix(value, mountPath+"/")) && len(mountPath) > len(longest) {
			longest = mountPath
		}
	}
	if longest == "" {
		return value
	}
	return mounts[longest] + strings.TrimPrefix(value, longest)
}

// rewritePaths moves every path under a mount path that content names to its host
// directory, as hostPath does for an argument, in one pass: a host directory written in
// is not rewritten again (the pods' work directory may itself be under /tmp, a mount path).
func (mounts hostMounts) rewritePaths(content []byte) []byte {
	if len(mounts) == 0 {
		return content
	}
	// The longest first, so that a mount under another keeps its own directory.
	paths := make([]string, 0, len(mounts))
	for mountPath := range mounts {
		paths = append(paths, regexp.QuoteMeta(mountPath+"/"))
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	pattern := regexp.MustCompile(strings.Join(paths, "|"))
	return pattern.ReplaceAllFunc(content, func(match []byte) []byte {
		return []byte(mounts[strings.TrimSuffix(string(match), "/")] + "/")
	})
}

func (r *runner) binaryFor(image string) string {
	for _, mapping := range r.binaries {
		if strings.Contains(image, mapping.imageSubstring) {
			return mapping.path
		}
	}
	return ""
}
