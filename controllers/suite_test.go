package controllers

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/installer"
)

// The integration tests run the real operator manager against a real kube-apiserver and
// etcd (envtest, from KUBEBUILDER_ASSETS). The manager runs as a user holding only the
// RBAC an installation gives it (config/rbac), so a missing permission fails here as it
// would in a cluster.
var (
	testEnv        *envtest.Environment
	adminConfig    *rest.Config
	adminClient    client.Client
	adminClientset *kubernetes.Clientset
	testScheme     = runtime.NewScheme()
)

const operatorUser = "system:serviceaccount:secondary-scheduler-operator:secondary-scheduler-operator-controller-manager"

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(testScheme))
	utilruntime.Must(v1.AddToScheme(testScheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(testScheme))
}

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run `make test-integration`, which builds kube-apiserver and etcd into bin/ and sets it")
		os.Exit(1)
	}
	// Everything the operator logs, at every level, is kept for tests that grep it; it
	// reaches stderr only with TEST_VERBOSE.
	logf.SetLogger(zap.New(zap.WriteTo(operatorLog), zap.UseDevMode(true), zap.Level(zapcore.Level(-10))))
	code, err := runSuite(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration suite:", err)
		os.Exit(1)
	}
	// controller-runtime recovers a panicking reconcile and retries it: a test may pass
	// all the same, so the log is the evidence.
	if log := operatorLog.String(); code == 0 && strings.Contains(log, "Observed a panic") {
		fmt.Fprintln(os.Stderr, "integration suite: a reconcile panicked:\n"+log[strings.Index(log, "Observed a panic"):][:min(4000, len(log)-strings.Index(log, "Observed a panic"))])
		os.Exit(1)
	}
	os.Exit(code)
}

// capturedLog keeps what the operator logs, and echoes it when TEST_VERBOSE is set.
type capturedLog struct {
	mu   sync.Mutex
	text strings.Builder
}

var operatorLog = &capturedLog{}

func (l *capturedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	if os.Getenv("TEST_VERBOSE") != "" {
		_, _ = os.Stderr.Write(p)
	}
	return len(p), nil
}

func (l *capturedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

func runSuite(m *testing.M) (int, error) {
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	if adminConfig, err = testEnv.Start(); err != nil {
		return 0, fmt.Errorf("start envtest: %w", err)
	}
	defer func() { _ = testEnv.Stop() }()
	if adminClient, err = client.New(adminConfig, client.Options{Scheme: testScheme}); err != nil {
		return 0, err
	}
	adminClientset = kubernetes.NewForConfigOrDie(adminConfig)
	if err := registerClusterNode(context.Background()); err != nil {
		return 0, err
	}

	// As the installer does: the routing policy and its binding are fixed, shipped beside
	// the operator, which writes only the routing table they read.
	if err := installRoutingPolicy(context.Background()); err != nil {
		return 0, err
	}
	operatorConfig, err := operatorIdentity()
	if err != nil {
		return 0, err
	}
	operatorRESTConfig = operatorConfig
	// As an admin allows namespaces before the operator starts (its flag lists them).
	for _, namespace := range schedulerNamespaces {
		if err := allowSchedulerNamespace(context.Background(), adminClient, operatorUser, namespace); err != nil {
			return 0, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The manager's requests are counted (requests_test.go); other tests' clients that
	// act as the operator are not.
	countedConfig := rest.CopyConfig(operatorConfig)
	countedConfig.Wrap(operatorRequests.wrap)
	stopped, err := startOperator(ctx, countedConfig)
	if err != nil {
		return 0, err
	}
	code := m.Run()
	cancel()
	if err := <-stopped; err != nil {
		return 0, fmt.Errorf("operator manager: %w", err)
	}
	return code, nil
}

// installRoutingPolicy applies the routing policy and its binding as the installer ships
// them (config/routing), as an admin.
func installRoutingPolicy(ctx context.Context) error {
	return installer.ApplyRoutingPolicy(ctx, adminClient, "..")
}

// clusterNodeName is the node every cluster has and envtest, which runs no kubelet, lacks.
const clusterNodeName = "envtest-node"

// registerClusterNode registers a Ready node that the schedulers' own pods may run on,
// so that a scheduler is not degraded for want of one (NoSchedulableNodes). It has no
// room for workloads: a test that runs a real scheduler finds its pod on the node that
// test made, and a test that counts nodes selects its own by a label.
func registerClusterNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: clusterNodeName, Labels: map[string]string{corev1.LabelHostname: clusterNodeName}}}
	if err := adminClient.Create(ctx, node); err != nil {
		return fmt.Errorf("register node %s: %w", clusterNodeName, err)
	}
	full := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	node.Status = corev1.NodeStatus{Capacity: full, Allocatable: full,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}}
	if err := adminClient.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("report node %s Ready: %w", clusterNodeName, err)
	}
	// The TaintNodesByCondition admission plugin taints every new node not-ready; a
	// kubelet's node controller would lift it once ready.
	node.Spec.Taints = nil
	if err := adminClient.Update(ctx, node); err != nil {
		return fmt.Errorf("untaint node %s: %w", clusterNodeName, err)
	}
	return nil
}

// operatorIdentity creates a user holding exactly the RBAC an installation gives the
// operator (config/rbac), in the operator's own namespace.
func operatorIdentity() (*rest.Config, error) {
	if err := grantOperatorRBAC(context.Background(), adminClient, operatorUser, operatorNamespace); err != nil {
		return nil, fmt.Errorf("grant the operator its RBAC: %w", err)
	}
	user, err := testEnv.AddUser(envtest.User{Name: operatorUser}, adminConfig)
	if err != nil {
		return nil, fmt.Errorf("add operator user: %w", err)
	}
	return user.Config(), nil
}

// operatorNamespace is where the operator runs; schedulerNamespaces are the namespaces
// where it runs schedulers, as a cluster admin allows them: each scenario takes the next,
// and allows it as the docs tell an admin to (a RoleBinding for the operator there).
const operatorNamespace = "secondary-scheduler-operator"

var schedulerNamespaces = func() []string {
	names := make([]string, 96)
	for i := range names {
		names[i] = fmt.Sprintf("it-%d", i+1)
	}
	return names
}()

var namespacesTaken atomic.Int32

// operatorRESTConfig authenticates as the operator.
var operatorRESTConfig *rest.Config

// takeSchedulerNamespace returns the next namespace where the operator runs schedulers.
func takeSchedulerNamespace() (string, error) {
	i := int(namespacesTaken.Add(1)) - 1
	if i >= len(schedulerNamespaces) {
		return "", fmt.Errorf("more scenarios than scheduler namespaces (%d): add to schedulerNamespaces", len(schedulerNamespaces))
	}
	return schedulerNamespaces[i], nil
}

// startOperator runs the manager as main.go does.
func startOperator(ctx context.Context, config *rest.Config) (<-chan error, error) {
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(schedulerNamespaces, operatorNamespace, true),
	})
	if err != nil {
		return nil, err
	}
	// As an installation does: the admission policy the installer ships; then, as main.go
	// does, its parameters written before the controllers start, with the operator's own
	// permissions, and kept in place after.
	if err := installer.ApplyAdmissionPolicies(ctx, adminClient, "..", operatorNamespace); err != nil {
		return nil, err
	}
	policies, err := admission.Desired(operatorNamespace, nil)
	if err != nil {
		return nil, err
	}
	direct, err := client.New(config, client.Options{Scheme: testScheme})
	if err != nil {
		return nil, err
	}
	if err := policies.Ensure(ctx, direct, direct); err != nil {
		return nil, fmt.Errorf("write the admission policy's parameters as the operator: %w", err)
	}
	if err := (&AdmissionParametersReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Policies: policies}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	reconciler, err := NewSecondarySchedulerReconciler(mgr, Options{
		Client:                  countApplies(mgr.GetClient()),
		Dial:                    loopbackOnlyDial,
		MetricsProbeInterval:    time.Second,
		ExtenderProbeInterval:   time.Second,
		DeschedulerReadInterval: time.Second,
		Clock:                   operatorClock,
		Tenancy:                 tenancy.Policy{Namespaces: schedulerNamespaces},
		// Tests make their Prometheus Services in these namespaces or give an address.
		PrometheusNamespaces: []string{"openshift-monitoring", "monitoring", "observability", "rules-monitoring"},
		Admission:            policies,
		// Long enough for a pod to be created and looked at, short for the tests.
		StrandedPodGrace:      5 * time.Second,
		IgnoredSchedulerNames: []string{ignoredSchedulerName},
	})
	if err != nil {
		return nil, err
	}
	if err := SetUpRouting(mgr, reconciler, true, operatorNamespace); err != nil {
		return nil, err
	}
	if err := SetUpPluginController(ctx, mgr, reconciler, operatorNamespace); err != nil {
		return nil, err
	}
	if err := reconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	return stopped, nil
}

// loopbackOnlyDial dials like the operator does, but refuses Service names at once:
// outside a cluster they would go to this machine's resolver, and tests talk to loopback only.
func loopbackOnlyDial(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
		return nil, fmt.Errorf("tests reach loopback addresses only, not %s", address)
	}
	return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, address)
}

// operatorClock is the operator's clock in these tests: real time, moved ahead by a test
// that needs a day to pass, such as the renewal of a metrics token.
var operatorClock = &aheadClock{}

type aheadClock struct{ ahead atomic.Int64 }

func (c *aheadClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.ahead.Load())) }
func (c *aheadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// moveAhead makes the operator's time run by ahead of the real time.
func (c *aheadClock) moveAhead(ahead time.Duration) { c.ahead.Store(int64(ahead)) }

// operatorApplies counts the operator's writes of its objects, creates and server-side
// applies, by kind/namespace/name.
var operatorApplies = struct {
	sync.Mutex
	count map[string]int
}{count: map[string]int{}}

// countApplies wraps the operator's client to count its creates and applies in
// operatorApplies.
func countApplies(c client.Client) client.Client { return &applyCounter{Client: c} }

type applyCounter struct{ client.Client }

func (c *applyCounter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	// The operator applies unstructured objects only.
	if object, ok := obj.(interface {
		GetKind() string
		GetNamespace() string
		GetName() string
	}); ok {
		operatorApplies.Lock()
		operatorApplies.count[object.GetKind()+"/"+object.GetNamespace()+"/"+object.GetName()]++
		operatorApplies.Unlock()
	}
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *applyCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	// The operator creates its objects unstructured (createIfAbsent).
	if object, ok := obj.(*unstructured.Unstructured); ok {
		operatorApplies.Lock()
		operatorApplies.count[object.GetKind()+"/"+object.GetNamespace()+"/"+object.GetName()]++
		operatorApplies.Unlock()
	}
	return c.Client.Create(ctx, obj, opts...)
}

// appliesIn returns how many times each object in namespace was written (created or
// applied), by kind/namespace/name.
func appliesIn(namespace string) map[string]int {
	operatorApplies.Lock()
	defer operatorApplies.Unlock()
	out := map[string]int{}
	for key, count := range operatorApplies.count {
		if parts := strings.SplitN(key, "/", 3); len(parts) == 3 && parts[1] == namespace {
			out[key] = count
		}
	}
	return out
}
