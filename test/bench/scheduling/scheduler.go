package scheduling

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/hostprocess"
)

// Config names one of the two scheduler configurations compared.
type Config string

const (
	// Ours is what internal/render renders for a BinPacking SecondaryScheduler.
	Ours Config = "ours"
	// Upstream is kube-scheduler's defaults with a profile of the same scheduler name.
	Upstream Config = "upstream"
	// OursRouted is Ours, scheduling pods that name no scheduler, which the routing
	// policy routes to it (see routePods).
	OursRouted Config = "ours-routed"
)

// Description says what the configuration is, for tables and the plot's legend.
func (c Config) Description() string {
	switch c {
	case Ours:
		return "ours (rendered BinPacking)"
	case OursRouted:
		return "ours, pods routed by spec.routing"
	}
	return "upstream defaults"
}

// schedulerName is what the benchmark's pods put in spec.schedulerName, and the name of
// the SecondaryScheduler rendered.
const schedulerName = "bin-packing"

// binPackingScheduler is the SecondaryScheduler whose configuration is measured, in the
// benchmark's namespace: its leader election Lease is made there.
func binPackingScheduler() *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: schedulerName, Namespace: benchNamespace},
		Spec:       v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile}},
	}
}

// schedulerConfig is the configuration file of config, pointed at kubeconfig (outside a
// pod there is no in-cluster configuration), and the Lease its leader election holds.
// Upstream's defaults would elect on kube-system/kube-scheduler, the cluster's default
// scheduler's Lease; it gets one of its own, as ours does, so that neither waits for the
// other and both pay the same renewals.
func schedulerConfig(config Config, kubeconfig string) (content []byte, lease string, err error) {
	var rendered string
	switch config {
	case Ours, OursRouted:
		cr := binPackingScheduler()
		if rendered, err = render.SchedulerConfig(cr, render.Facts{}); err != nil {
			return nil, "", fmt.Errorf("render the BinPacking scheduler config: %w", err)
		}
		lease = render.LeaseName(cr)
	case Upstream:
		lease = "upstream-defaults-scheduler-lease"
		upstream := map[string]any{
			"apiVersion": "kubescheduler.config.k8s.io/v1",
			"kind":       "KubeSchedulerConfiguration",
			"leaderElection": map[string]any{
				"leaderElect": true, "resourceLock": "leases", "resourceName": lease, "resourceNamespace": benchNamespace,
			},
			"profiles": []any{map[string]any{"schedulerName": schedulerName}},
		}
		text, err := yaml.Marshal(upstream)
		if err != nil {
			return nil, "", fmt.Errorf("write the upstream scheduler config: %w", err)
		}
		rendered = string(text)
	default:
		return nil, "", fmt.Errorf("unknown scheduler configuration %q", config)
	}
	content, err = hostprocess.PointAtKubeconfig([]byte(rendered), kubeconfig)
	if err != nil {
		return nil, "", err
	}
	return content, lease, nil
}

// schedulerProcess is a kube-scheduler running on this host.
type schedulerProcess struct {
	cmd    *exec.Cmd
	logs   *os.File
	exited chan struct{}
	err    error // why it exited, once exited is closed
	port   int
}

// startScheduler runs binary with configFile and extraArgs, its logs in logPath, serving
// its probes on a free local port. The verbosity is what the operator gives a scheduler of log level
// Normal, so that both configurations log as much as a deployed one.
func startScheduler(binary, configFile, kubeconfig, logPath string, extraArgs []string) (*schedulerProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logs, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create scheduler log: %w", err)
	}
	args := append([]string{"--config=" + configFile, "--secure-port=" + strconv.Itoa(port),
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--cert-dir=" + filepath.Join(filepath.Dir(logPath), "certs"),
		"--v=" + strconv.Itoa(v1.Normal.Verbosity())}, extraArgs...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		_ = logs.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	process := &schedulerProcess{cmd: cmd, logs: logs, exited: make(chan struct{}), port: port}
	go func() {
		process.err = cmd.Wait()
		close(process.exited)
	}()
	return process, nil
}

// freePort is a local TCP port that nothing listens on now.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits until the scheduler leads (holds lease, which kube-scheduler takes only
// once its informers have synced) and answers /readyz, so that it schedules the first pod
// created. It fails at once when the process exits.
func (p *schedulerProcess) waitReady(ctx context.Context, client kubernetes.Interface, lease string, timeout time.Duration) error {
	// The scheduler's own serving certificate is self-signed; only its readiness is read.
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", p.port)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, p.exitError()
		default:
		}
		held, err := client.CoordinationV1().Leases(benchNamespace).Get(ctx, lease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && (held.Spec.HolderIdentity == nil || *held.Spec.HolderIdentity == "")) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read lease %s: %w", lease, err)
		}
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return false, err
		}
		response, err := probe.Do(request)
		if err != nil {
			return false, nil
		}
		_ = response.Body.Close()
		return response.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("wait for kube-scheduler to lead and be ready: %w", err)
	}
	return nil
}

// loggedContentType is the clientConnection.contentType of the configuration that
// kube-scheduler logs it uses, at its start ("Using component config"), or "" when its log
// has none: what its clients encode requests in, and ask responses in, whether the
// configuration file set it or kube-scheduler defaulted it.
func loggedContentType(log []byte) string {
	_, config, found := bytes.Cut(log, []byte(`"Using component config" config=<`+"\n"))
	if !found {
		return ""
	}
	// klog writes the configuration one field a line, each indented by a tab, and ends
	// it with a line " >"; contentType is only clientConnection's.
	for line := range bytes.Lines(config) {
		field, indented := bytes.CutPrefix(line, []byte("\t"))
		if !indented {
			return ""
		}
		if value, found := bytes.CutPrefix(bytes.TrimSpace(field), []byte("contentType:")); found {
			return string(bytes.TrimSpace(value))
		}
	}
	return ""
}

// exitError says that the scheduler exited, and why; call it once exited is closed.
func (p *schedulerProcess) exitError() error {
	if p.err == nil {
		return fmt.Errorf("kube-scheduler exited; see %s", p.logs.Name())
	}
	return fmt.Errorf("kube-scheduler exited (%w); see %s", p.err, p.logs.Name())
}

// stop ends the scheduler (SIGTERM, then SIGKILL after grace) and closes its log.
func (p *schedulerProcess) stop(grace time.Duration) error {
	defer func() { _ = p.logs.Close() }()
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop kube-scheduler: %w", err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill kube-scheduler: %w", err)
	}
	<-p.exited
	return nil
}
