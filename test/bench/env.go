package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/hostprocess"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
}

// The operator's identity: a ServiceAccount bound to cluster-admin, so that the API
// server's audit log (which records ServiceAccounts' requests) shows each of its requests.
const (
	operatorNamespace      = "bench-operator"
	operatorServiceAccount = "operator"
	operatorUser           = "system:serviceaccount:" + operatorNamespace + ":" + operatorServiceAccount
)

// schedulerHosts is how many Nodes podrunner keeps: each takes 110 pods, and the scale
// benchmark runs 500 scheduler pods.
const schedulerHosts = 6

// env is the local cluster and the processes the benchmarks run against: the operator
// and podrunner, the kubelet of the scheduler pods.
type env struct {
	repoRoot, controlPlaneDir, outputDir, binDir string
	clusterName, kubeconfig                      string

	config    *rest.Config
	client    client.Client
	clientset kubernetes.Interface
	tracker   *tracker
	audit     auditLog

	// namespaces are where the operator may run schedulers: every benchmark's.
	namespaces []string
	// operatorBinary is the manager the operator runs; baseline runs swap it.
	operatorBinary string
	// operatorNamespaces are the namespaces the running operator was allowed (and
	// watches): namespaces, but for the memory benchmark's first start.
	operatorNamespaces []string
	operatorKubeconfig string
	operator           *process
	metricsURL         string
	// pprofURL is the running operator's /debug/pprof/, empty when its binary has none.
	pprofURL string

	podrunner *process
	// fakeReady is the mode podrunner runs in: pods Ready without a process.
	fakeReady bool
	// pluginsBinary is the kube-scheduler podrunner runs for the scheduler-plugins image:
	// scheduler-plugins' own build, or, when empty, the in-tree one, which has every plugin
	// the other benchmarks' profiles use.
	pluginsBinary string

	// driftRunFor is how long the drift benchmark's loop runs; zero for its default.
	driftRunFor time.Duration

	// lastRun is set for the last benchmark run: what it leaves, the cluster's deletion
	// removes, so it need not clean up.
	lastRun bool
	// atRest is what the last waitQuiet found: the operator at rest, since when.
	atRest restState
}

// setUp builds the binaries, starts the local cluster, podrunner and the tracker, and
// gives the operator an identity. The operator itself is started by useOperator.
func (e *env) setUp(ctx context.Context) error {
	if err := os.MkdirAll(e.binDir, 0o755); err != nil {
		return err
	}
	logf("building the operator and podrunner")
	// The operator as the Dockerfile builds it, static and stripped: its memory is
	// measured, and the binary's pages are part of it. Not -trimpath, which changes no
	// page that matters but every package's build key: with it, this build compiled the
	// whole dependency tree again (4m23s on 2026-11-26), where make bench's own go run
	// (CGO_ENABLED=0 too) has just compiled it.
	builds := [][]string{
		{"-ldflags", "-s -w", "-o", filepath.Join(e.binDir, "manager"), "."},
		{"-o", filepath.Join(e.binDir, "podrunner"), "./test/podrunner"},
	}
	for _, build := range builds {
		if err := e.goBuild(ctx, build...); err != nil {
			return err
		}
	}
	if e.operatorBinary == "" {
		e.operatorBinary = filepath.Join(e.binDir, "manager")
	}
	logf("starting the local cluster %s (hack/local-cluster.sh)", e.clusterName)
	_, _ = e.localCluster(ctx, "down")
	// Once more on failure: kubectl wait for the CRD's Established condition fails, rather
	// than waits, when it reads the CRD before the API server gave it any condition; a
	// second up finds the cluster there and only applies and waits again.
	if output, err := e.localCluster(ctx, "up"); err != nil {
		logf("hack/local-cluster.sh up failed; once more: %v\n%s", err, lastLines(output, 3))
		if output, err := e.localCluster(ctx, "up"); err != nil {
			return fmt.Errorf("hack/local-cluster.sh up: %w\n%s", err, output)
		}
	}
	auditPath, err := e.localCluster(ctx, "audit-log")
	if err != nil {
		return err
	}
	e.audit = auditLog{path: strings.TrimSpace(auditPath)}
	e.config, err = clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		return err
	}
	// Creating thousands of objects at once is what some benchmarks do.
	e.config.QPS, e.config.Burst = 1000, 2000
	if e.client, err = client.New(e.config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if e.clientset, err = kubernetes.NewForConfig(e.config); err != nil {
		return err
	}
	if err := e.widenServiceRange(ctx); err != nil {
		return err
	}
	for _, namespace := range append([]string{operatorNamespace}, e.namespaces...) {
		if err := e.createNamespace(ctx, namespace); err != nil {
			return err
		}
	}
	if err := e.writeOperatorKubeconfig(ctx); err != nil {
		return err
	}
	if err := e.usePodrunner(ctx, false); err != nil {
		return err
	}
	e.tracker, err = startTracker(ctx, e.config)
	return err
}

// tearDown stops what setUp and the benchmarks started; keepCluster leaves the cluster.
func (e *env) tearDown(keepCluster bool) {
	e.operator.stop()
	e.podrunner.stop()
	if keepCluster {
		logf("the cluster keeps running: KUBECONFIG=%s; stop it with CLUSTER_NAME=%s OUTPUT_DIR=%s hack/local-cluster.sh down",
			e.kubeconfig, e.clusterName, e.outputDir)
		return
	}
	// The benchmarks' context may be cancelled by now; the cluster goes anyway.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if output, err := e.localCluster(ctx, "down"); err != nil {
		logf("hack/local-cluster.sh down: %v\n%s", err, output)
	}
}

func (e *env) command(ctx context.Context, name string, args ...string) (string, error) {
	command := exec.CommandContext(ctx, name, args...)
	command.Dir = e.repoRoot
	output, err := command.CombinedOutput()
	return string(output), err
}

// localCluster runs hack/local-cluster.sh for the benchmarks' own cluster and returns
// its standard output.
func (e *env) localCluster(ctx context.Context, action string) (string, error) {
	var stdout, stderr bytes.Buffer
	command := exec.CommandContext(ctx, filepath.Join(e.repoRoot, "hack", "local-cluster.sh"), action)
	command.Env = append(os.Environ(), "CLUSTER_NAME="+e.clusterName, "OUTPUT_DIR="+e.outputDir, "CONTROL_PLANE_DIR="+e.controlPlaneDir,
		"KUBE_CONTROLLER_MANAGER_ARGS="+controllerManagerArgs)
	command.Stdout, command.Stderr = &stdout, &stderr
	if err := command.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// controllerManagerArgs raise kube-controller-manager's client rate from its default of
// 20 requests a second, as large clusters do: at 20, its node lifecycle controller lifted
// the not-ready taint of the outcome benchmark's 450 new nodes at about 5 a second (a GET
// and a PATCH each, beside the other controllers' requests), which took about 2 minutes,
// and its garbage and namespace controllers took minutes over the scale benchmark's
// objects. At 200 the 450 nodes are untainted within 8 s.
const controllerManagerArgs = "kube-api-qps=200 kube-api-burst=400"

// benchServiceCIDR is a service range beside kube-apiserver's default 10.0.0.0/24, which
// holds 253 ClusterIPs: each scheduler's Service takes one, and the scale benchmark runs
// 500 schedulers.
const benchServiceCIDR = "10.96.0.0/16"

// widenServiceRange adds benchServiceCIDR to the cluster's service ranges.
func (e *env) widenServiceRange(ctx context.Context) error {
	serviceCIDR := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{benchServiceCIDR}}}
	if err := e.client.Create(ctx, serviceCIDR); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("add service range %s: %w", benchServiceCIDR, err)
	}
	return nil
}

// lastLines is the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func (e *env) createNamespace(ctx context.Context, name string) error {
	err := e.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// writeOperatorKubeconfig gives the operator a ServiceAccount of its own, bound to
// cluster-admin, and writes a kubeconfig with its token.
func (e *env) writeOperatorKubeconfig(ctx context.Context) error {
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorServiceAccount}}
	if err := e.client.Create(ctx, account); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the operator's ServiceAccount: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: operatorServiceAccount}},
	}
	if err := e.client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind the operator's ServiceAccount: %w", err)
	}
	token, err := e.clientset.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, operatorServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request the operator's token: %w", err)
	}
	e.operatorKubeconfig = filepath.Join(e.outputDir, "operator.kubeconfig")
	return hostprocess.WriteKubeconfig(e.operatorKubeconfig, e.config.Host, e.config.CAData, e.config.CAFile, token.Status.Token)
}

// usePodrunner runs podrunner in the given mode, with the in-tree kube-scheduler for
// every image, restarting it when it runs otherwise. With fakeReady, scheduler pods are
// Ready without a process.
func (e *env) usePodrunner(ctx context.Context, fakeReady bool) error {
	return e.usePodrunnerWith(ctx, fakeReady, "")
}

// usePodrunnerWith is usePodrunner running pluginsBinary for the scheduler-plugins image
// (the in-tree kube-scheduler when empty).
func (e *env) usePodrunnerWith(ctx context.Context, fakeReady bool, pluginsBinary string) error {
	if e.podrunner != nil && e.podrunner.running() && e.fakeReady == fakeReady && e.pluginsBinary == pluginsBinary {
		return nil
	}
	e.podrunner.stop()
	kubeScheduler := filepath.Join(e.controlPlaneDir, "kube-scheduler")
	args := []string{filepath.Join(e.binDir, "podrunner"), "--kubeconfig", e.kubeconfig,
		"--work-dir", filepath.Join(e.outputDir, "podrunner"), "--nodes", strconv.Itoa(schedulerHosts),
		"--binaries", "descheduler=" + filepath.Join(e.controlPlaneDir, "descheduler") +
			",scheduler-plugins=" + cmp.Or(pluginsBinary, kubeScheduler) + ",kube-scheduler=" + kubeScheduler}
	if fakeReady {
		args = append(args, "--fake-ready")
	}
	var err error
	if e.podrunner, err = startProcess(e.outputDir, "podrunner", args...); err != nil {
		return err
	}
	e.fakeReady, e.pluginsBinary = fakeReady, pluginsBinary
	return e.poll(ctx, 2*time.Minute, "podrunner's nodes are Ready", func() (bool, error) {
		for i := 1; i <= schedulerHosts; i++ {
			node := &corev1.Node{}
			if err := e.client.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("scheduler-host-%d", i)}, node); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if !render.NodeReady(node) || len(node.Spec.Taints) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// poll calls check every 250 ms until it returns true or an error, or timeout passes.
// Only for setting up and tearing down; figures come from the tracker's events.
func (e *env) poll(ctx context.Context, timeout time.Duration, what string, check func() (bool, error)) error {
	return e.pollEvery(ctx, 250*time.Millisecond, timeout, what, check)
}

// pollEvery calls check every interval until it returns true or an error, or timeout
// passes.
func (e *env) pollEvery(ctx context.Context, interval, timeout time.Duration, what string, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := check()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
