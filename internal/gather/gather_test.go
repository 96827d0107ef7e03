package gather

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

type fixedVersion struct{}

func (fixedVersion) ServerVersion() (*version.Info, error) {
	return &version.Info{Major: "1", Minor: "37"}, nil
}

func newGatherer(t *testing.T, objects ...client.Object) (*Gatherer, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cluster := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).
		WithIndex(&v1.SecondaryScheduler{}, SchedulerNameIndex, IndexSchedulerName).Build()
	return New(Config{Cache: cluster, API: cluster, Mapper: cluster.RESTMapper(), Version: fixedVersion{},
		Tenancy: tenancy.Policy{}}), cluster
}

// TestNewWrapsTheReaders checks that what a Gatherer holds of the clients it was given
// is their reading half alone: a client.Client passed as a reader cannot be asserted back
// into a writer from inside the package.
func TestNewWrapsTheReaders(t *testing.T) {
	gatherer, cluster := newGatherer(t)
	if _, isWriter := client.Reader(cluster).(client.Writer); !isWriter {
		t.Fatal("the fake client should be a writer, for this test to mean anything")
	}
	for name, held := range map[string]client.Reader{"cache": gatherer.cache, "api": gatherer.api} {
		if _, isWriter := held.(client.Writer); isWriter {
			t.Errorf("the Gatherer's %s reader is a writer too", name)
		}
	}
}

// TestGatherDeclaresReferencesEvenWhenRefusing checks that gathering declares the
// objects of the spec it read, to be watched, when it refuses for want of one of them:
// its creation is the change that fixes the refusal. What depends on the refused object
// stays undeclared.
func TestGatherDeclaresReferencesEvenWhenRefusing(t *testing.T) {
	gatherer, _ := newGatherer(t)
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "custom", UID: "u1"},
		Spec: v1.SecondarySchedulerSpec{SchedulerConfig: "mine", Profile: &v1.Profile{Type: v1.CustomProfile}}}
	facts, references, err := gatherer.Gather(context.Background(), cr)
	refused, ok := refusal.As(err)
	if !ok || refused.Reason != v1.ReasonConfigMapNotFound || facts != nil {
		t.Fatalf("Gather = %v, %v; want a ConfigMapNotFound refusal", facts, err)
	}
	want := types.NamespacedName{Namespace: "platform", Name: "mine"}
	if !references.Config.Known || references.Config.Key == nil || *references.Config.Key != want {
		t.Errorf("references.Config = %+v, want %s", references.Config, want)
	}
	// The extenders a refused Custom configuration names are unknown: their watches stay
	// as they were. The metrics' references do not depend on it, and are gathered on.
	if references.ExtenderSecrets.Known || references.ExtenderConfigMaps.Known {
		t.Errorf("the refused configuration's extenders were taken as known: %+v", references)
	}
	if !references.TokenSecret.Known || !references.CABundle.Known {
		t.Errorf("gathering stopped at the refusal, before the metrics, which do not depend on it: %+v", references)
	}
}

// TestGatherReadsAndWritesNothing runs a whole gathering of a Custom scheduler and
// checks its facts, and that the cluster is as it was.
func TestGatherReadsAndWritesNothing(t *testing.T) {
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "mine", ResourceVersion: "7"},
		Data: map[string]string{"config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: custom\n"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "3"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	gatherer, cluster := newGatherer(t, config, node)
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "custom", UID: "u1"},
		Spec: v1.SecondarySchedulerSpec{SchedulerConfig: "mine", Profile: &v1.Profile{Type: v1.CustomProfile}}}
	facts, references, err := gatherer.Gather(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	if string(facts.Render.CustomConfig) != config.Data["config.yaml"] || facts.Render.KubernetesMinor != 37 ||
		facts.Placement.Nodes != 1 || facts.Placement.Matching != 1 || len(facts.SchedulerNames) != 1 || facts.SchedulerNames[0] != "custom" {
		t.Errorf("facts = %+v", facts)
	}
	if !references.Config.Known || !references.TokenSecret.Known || references.TokenSecret.Key != nil {
		t.Errorf("references = %+v", references)
	}
	for _, object := range []client.Object{config, node} {
		now := object.DeepCopyObject().(client.Object)
		if err := cluster.Get(context.Background(), client.ObjectKeyFromObject(object), now); err != nil {
			t.Fatal(err)
		}
		if now.GetResourceVersion() != object.GetResourceVersion() {
			t.Errorf("%s changed: resourceVersion %s, was %s", object.GetName(), now.GetResourceVersion(), object.GetResourceVersion())
		}
	}
}

// TestGatherNamesThePoolsNodes checks that the nodes whose load a scheduler's metrics
// must cover are those it places pods on: its node pool's when it has one, every node
// otherwise, Ready or not.
func TestGatherNamesThePoolsNodes(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	nodes := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "batch-1", Labels: map[string]string{"pool": "batch"}}, Status: corev1.NodeStatus{Conditions: ready}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "batch-2", Labels: map[string]string{"pool": "batch"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{"pool": "gpu"}}, Status: corev1.NodeStatus{Conditions: ready}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "control-plane"}, Status: corev1.NodeStatus{Conditions: ready}},
	}
	for _, tc := range []struct {
		name string
		pool *metav1.LabelSelector
		want []string
	}{
		{"no pool", nil, []string{"batch-1", "batch-2", "control-plane", "gpu-1"}},
		{"a pool", &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "batch"}}, []string{"batch-1", "batch-2"}},
		{"a pool of no node", &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "none"}}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gatherer, _ := newGatherer(t, nodes...)
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer", UID: "u1"},
				Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile}, NodePool: tc.pool}}
			facts, _, err := gatherer.Gather(context.Background(), cr)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(facts.NodeNames)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("NodeNames = %v, want %v", got, tc.want)
			}
			if facts.Placement.Nodes != int32(len(nodes)) {
				t.Errorf("Placement.Nodes = %d, want every node (%d)", facts.Placement.Nodes, len(nodes))
			}
		})
	}
}

// TestGatherNamesEveryIndependentProblem checks that problems which do not depend on each
// other are refused together, the first found keeping the reason: a user fixes all of
// them in one round instead of meeting one per round.
func TestGatherNamesEveryIndependentProblem(t *testing.T) {
	gatherer, _ := newGatherer(t)
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "load-variation", UID: "u1"},
		Spec: v1.SecondarySchedulerSpec{
			SchedulerImage:    "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7",
			PriorityClassName: "absent",
			Profile: &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile, Metrics: &v1.LoadMetrics{
				Address:             "https://prometheus-k8s.monitoring.svc:9091",
				CABundle:            &v1.ConfigMapKeyReference{Name: "prometheus-ca"},
				ServiceAccountToken: &v1.ServiceAccountTokenAuth{ClusterRole: "prometheus-k8s-reader"},
			}}}}
	_, _, err := gatherer.Gather(context.Background(), cr)
	want := []v1.ConditionReason{v1.ReasonPriorityClassNotFound, v1.ReasonCABundleNotFound, v1.ReasonClusterRoleNotAllowed}
	if got := refusal.Reasons(err); !slices.Equal(got, want) {
		t.Fatalf("Gather refused with %v (%v), want %v", got, err, want)
	}
}

// TestProbeVerifiesAsLoadWatcherDoes checks that the probe skips the verification of
// Prometheus' certificate only where load-watcher does: asked to, and with a token.
func TestProbeVerifiesAsLoadWatcherDoes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     string
		wantSkip bool
	}{
		{"unset, no token: load-watcher verifies", "metricProvider: {type: Prometheus, address: https://prometheus.example:9090}", false},
		{"unset, a token: load-watcher skips", "metricProvider: {type: Prometheus, address: https://prometheus.example:9090, token: t0ken}", true},
		{"false, a token: load-watcher verifies", "metricProvider: {type: Prometheus, address: https://prometheus.example:9090, token: t0ken, insecureSkipVerify: false}", false},
		{"true, no token: load-watcher verifies", "metricProvider: {type: Prometheus, address: https://prometheus.example:9090, insecureSkipVerify: true}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "mine"},
				Data: map[string]string{"config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n" +
					"- schedulerName: load\n  plugins:\n    score:\n      enabled: [{name: TargetLoadPacking}]\n" +
					"  pluginConfig:\n  - name: TargetLoadPacking\n    args:\n      " + tc.args + "\n"}}
			gatherer, _ := newGatherer(t, config)
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "custom", UID: "u1"},
				Spec: v1.SecondarySchedulerSpec{SchedulerConfig: "mine", Profile: &v1.Profile{Type: v1.CustomProfile}}}
			facts, _, err := gatherer.Gather(context.Background(), cr)
			if err != nil {
				t.Fatal(err)
			}
			if facts.Access == nil || facts.Access.InsecureSkipVerify != tc.wantSkip {
				t.Errorf("Access = %+v, want InsecureSkipVerify %t", facts.Access, tc.wantSkip)
			}
		})
	}
}
