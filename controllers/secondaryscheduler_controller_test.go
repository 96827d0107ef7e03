package controllers

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/rbacproxy"
)

func TestBinPackingSchedulerIsCreatedWithHonestStatus(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("packer")
	s.create(cr)

	// Before any scheduler pod is ready the scheduler is not Available, and says so.
	notReady := s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoReadyScheduler)
	s.g.Expect(notReady.Message).To(ContainSubstring("spec.schedulerName: packer"))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionTrue, v1.ReasonRollingOut)

	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Finalizers).To(ContainElement(Finalizer))
	status := cr.Status
	s.g.Expect(status.SchedulerName).To(Equal("packer"))
	s.g.Expect(status.Profile).To(Equal(v1.BinPackingProfile))
	// envtest's kube-apiserver is 1.37, newer than any scheduler-plugins release, and two
	// minor versions newer than the newest: outside the version-skew policy, which is said.
	s.g.Expect(status.Image).To(Equal("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7"))
	s.g.Expect(status.ImageSource).To(And(ContainSubstring("no scheduler-plugins release is known for Kubernetes 1.37"),
		ContainSubstring("2 minor versions older than the cluster's 1.37: Kubernetes' version-skew policy")))
	s.g.Expect(notReady.Message).To(ContainSubstring("version-skew policy"))
	s.g.Expect(status.ObservedGeneration).To(Equal(cr.Generation))

	deployment := s.deployment(cr)
	s.g.Expect(deployment).NotTo(BeNil())
	s.g.Expect(deployment.Spec.Template.Annotations[render.ConfigHashAnnotation]).To(Equal(status.ConfigHash))
	s.g.Expect(deployment.Spec.Template.Spec.Containers[0].Image).To(Equal(status.Image))
	s.g.Expect(deployment.Spec.Template.Spec.ServiceAccountName).To(Equal(render.WorkloadName(cr)))
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("schedulerName: packer"))
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("resourceName: packer-scheduler-lease"))

	// Every namespaced object is controlled by the SecondaryScheduler, for garbage collection.
	children := s.namespacedChildren(cr)
	s.g.Expect(children).To(HaveLen(8)) // Deployment, Service, ConfigMap, ServiceAccount, Lease, lease Role and RoleBinding, NetworkPolicy
	for _, child := range children {
		owner := metav1.GetControllerOf(child)
		s.g.Expect(owner).NotTo(BeNil(), "%T %s has no controller", child, child.GetName())
		s.g.Expect(owner.UID).To(Equal(cr.UID))
	}
	s.g.Expect(s.clusterScopedChildren(cr)).To(ConsistOf(
		"ClusterRoleBinding/secondary-scheduler:"+s.namespace+":packer:kube-scheduler",
		"ClusterRoleBinding/secondary-scheduler:"+s.namespace+":packer:volume-scheduler",
		"RoleBinding/kube-system/secondary-scheduler:"+s.namespace+":packer:authentication-reader",
	))

	// The Deployment controller reports ready pods: the scheduler becomes Available.
	s.markDeploymentReady(cr)
	ready := s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.g.Expect(ready.Message).To(ContainSubstring("1 of 1 scheduler pods ready"))
	s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionFalse, v1.ReasonRolloutComplete)
	s.g.Eventually(func() int32 { _ = s.get(cr); return cr.Status.ReadyReplicas }).Should(Equal(int32(1)))

	// Events reuse the condition reasons.
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElements(string(v1.ReasonSchedulerReady), string(v1.ReasonImageVersionSkew)))
}

func TestConfigEditRollsOutNewConfiguration(t *testing.T) {
	s := newScenario(t)
	userConfig := configMap("my-config", map[string]string{"config.yaml": goodConfig("locality", 5)})
	cr := custom("locality", "my-config")
	s.create(userConfig, cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(ContainSubstring("weight: 5"))
	firstHash := s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation]

	s.update(userConfig, func() { userConfig.Data["config.yaml"] = goodConfig("locality", 9) })
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(ContainSubstring("weight: 9"))
	s.g.Eventually(func() string {
		return s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation]
	}).ShouldNot(Equal(firstHash))
	s.g.Eventually(func() string { _ = s.get(cr); return cr.Status.ConfigHash }).
		Should(Equal(s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation]))
}

func TestDriftIsRepaired(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("drift")
	s.create(cr)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).ShouldNot(BeNil())
	original := s.deployment(cr)

	s.g.Expect(adminClient.Delete(s.ctx, original)).To(Succeed())
	s.g.Eventually(func() bool {
		recreated := s.deployment(cr)
		return recreated != nil && recreated.UID != original.UID
	}).Should(BeTrue(), "the deleted Deployment comes back")

	scaled := s.deployment(cr)
	s.update(scaled, func() { scaled.Spec.Replicas = ptr.To[int32](5) })
	s.g.Eventually(func() int32 { return *s.deployment(cr).Spec.Replicas }).Should(Equal(int32(1)), "a changed field is set back")

	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "kube-scheduler")}}
	s.g.Expect(adminClient.Delete(s.ctx, crb)).To(Succeed())
	s.g.Eventually(func() error { return s.get(crb) }).Should(Succeed(), "a deleted ClusterRoleBinding comes back")
}

func TestManagementStateTransitions(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("states")
	s.create(cr)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).ShouldNot(BeNil())

	// Unmanaged: the operator leaves a hand edit alone.
	s.update(cr, func() { cr.Spec.ManagementState = v1.Unmanaged })
	s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionFalse, v1.ReasonUnmanaged)
	edited := s.deployment(cr)
	s.update(edited, func() { edited.Spec.Replicas = ptr.To[int32](4) })
	s.g.Consistently(func() int32 { return *s.deployment(cr).Spec.Replicas }).Should(Equal(int32(4)))

	// Removed: every object goes, the SecondaryScheduler stays.
	s.update(cr, func() { cr.Spec.ManagementState = v1.Removed })
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonRemoved)
	s.g.Eventually(func() []client.Object { return s.namespacedChildren(cr) }).Should(BeEmpty())
	s.g.Eventually(func() []string { return s.clusterScopedChildren(cr) }).Should(BeEmpty())
	s.g.Expect(s.get(cr)).To(Succeed())

	// Managed again: everything comes back as specified.
	s.update(cr, func() { cr.Spec.ManagementState = v1.Managed })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() []client.Object { return s.namespacedChildren(cr) }).Should(HaveLen(8))
	s.g.Eventually(func() []string { return s.clusterScopedChildren(cr) }).Should(HaveLen(3))
	s.g.Expect(*s.deployment(cr).Spec.Replicas).To(Equal(int32(1)))

	// Unmanaged back to Managed repairs what was edited meanwhile.
	s.update(cr, func() { cr.Spec.ManagementState = v1.Unmanaged })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonUnmanaged)
	edited = s.deployment(cr)
	s.update(edited, func() { edited.Spec.Replicas = ptr.To[int32](3) })
	s.update(cr, func() { cr.Spec.ManagementState = v1.Managed })
	s.g.Eventually(func() int32 { return *s.deployment(cr).Spec.Replicas }).Should(Equal(int32(1)))
}

func TestDeletionRemovesClusterScopedObjects(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("doomed")
	s.create(cr)
	s.g.Eventually(func() []string { return s.clusterScopedChildren(cr) }).Should(HaveLen(3))

	s.g.Expect(adminClient.Delete(s.ctx, cr)).To(Succeed())
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(cr)) }).Should(BeTrue(), "the finalizer lets the resource go")
	s.g.Expect(s.clusterScopedChildren(cr)).To(BeEmpty())
	// The namespaced objects are left to the garbage collector, which envtest does not
	// run; their controller owner references were checked on creation.
}

func TestBadInputKeepsTheRunningSchedulerAndHeals(t *testing.T) {
	s := newScenario(t)
	userConfig := configMap("user-config", map[string]string{"config.yaml": goodConfig("careful", 3)})
	cr := custom("careful", "user-config")
	// With spec.schedulerName the configuration must have a profile of that name; without
	// it, as in OpenShift's operator, it serves whatever names its profiles give.
	cr.Spec.SchedulerName = "careful"
	s.create(userConfig, cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(ContainSubstring("weight: 3"))
	goodDeployment := s.deployment(cr)
	goodRendered := s.renderedConfig(cr)

	tests := []struct {
		name        string
		data        map[string]string // nil deletes the ConfigMap
		reason      v1.ConditionReason
		messageHint string
	}{
		{"missing ConfigMap", nil, v1.ReasonConfigMapNotFound, "does not exist"},
		{"missing config.yaml key", map[string]string{"scheduler.yaml": goodConfig("careful", 3)}, v1.ReasonConfigKeyMissing, "its keys: scheduler.yaml"},
		{"not YAML", map[string]string{"config.yaml": "profiles: [unclosed"}, v1.ReasonConfigNotYAML, "not valid YAML"},
		{"YAML but not a KubeSchedulerConfiguration", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\n"}, v1.ReasonNotKubeSchedulerConfiguration, "kind KubeSchedulerConfiguration"},
		{"a list, not a mapping", map[string]string{"config.yaml": "- a\n- b\n"}, v1.ReasonNotKubeSchedulerConfiguration, "YAML mapping"},
		{"removed apiVersion v1beta3", map[string]string{"config.yaml": strings.Replace(goodConfig("careful", 3), "/v1\n", "/v1beta3\n", 1)}, v1.ReasonUnsupportedConfigVersion, "change apiVersion to kubescheduler.config.k8s.io/v1"},
		{"removed apiVersion v1beta1", map[string]string{"config.yaml": strings.Replace(goodConfig("careful", 3), "/v1\n", "/v1beta1\n", 1)}, v1.ReasonUnsupportedConfigVersion, "no longer serve"},
		{"unknown field", map[string]string{"config.yaml": goodConfig("careful", 3) + "percentageOfNodesToScor: 50\n"}, v1.ReasonInvalidConfig, `unknown field "percentageOfNodesToScor"`},
		{"unknown field in in-tree plugin args", map[string]string{"config.yaml": goodConfig("careful", 3) + "  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategyy: {}\n"}, v1.ReasonInvalidConfig, "scoringStrategyy"},
		{"no profile", map[string]string{"config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"}, v1.ReasonNoProfile, "has no profiles"},
		{"no profile for this scheduler", map[string]string{"config.yaml": goodConfig("someone-else", 3)}, v1.ReasonProfileNotFound, "no profile in ConfigMap"},
		{"profile named default-scheduler", map[string]string{"config.yaml": goodConfig("careful", 3) + "- schedulerName: default-scheduler\n"}, v1.ReasonDefaultSchedulerClaimed, "belongs to the cluster's own scheduler"},
		{"profile without a name", map[string]string{"config.yaml": goodConfig("careful", 3) + "- plugins: {}\n"}, v1.ReasonDefaultSchedulerClaimed, "has no schedulerName"},
		{"YAML alias in leaderElection", map[string]string{"config.yaml": goodConfig("careful", 3) + "leaderElection: &le\n  leaderElect: true\nclientConnection: *le\n"},
			v1.ReasonInvalidConfig, "anchor or alias"},
		{"config under binaryData", nil, v1.ReasonConfigKeyMissing, "binaryData"},
		{"a misspelt plugin, caught before rollout", map[string]string{"config.yaml": strings.Replace(goodConfig("careful", 3), "ImageLocality", "ImageLocalty", 1)},
			v1.ReasonInvalidConfig, `enables plugin ImageLocalty, which neither Kubernetes' kube-scheduler nor scheduler-plugins' has: the scheduler would refuse to start; did you mean ImageLocality for ImageLocalty?`},
		{"config too large", map[string]string{"config.yaml": goodConfig("careful", 3) + "# " + strings.Repeat("x", 70000) + "\n"}, v1.ReasonConfigTooLarge, "the operator accepts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scenario{t: t, g: NewWithT(t), ctx: s.ctx, namespace: s.namespace}
			s.g.SetDefaultEventuallyTimeout(eventuallyTimeout)
			s.g.SetDefaultEventuallyPollingInterval(pollInterval)
			switch {
			case tt.reason == v1.ReasonConfigKeyMissing && tt.data == nil:
				existing := configMapIn(s.namespace, "user-config")
				s.g.Expect(s.get(existing)).To(Succeed())
				s.update(existing, func() {
					existing.Data = nil
					existing.BinaryData = map[string][]byte{"config.yaml": []byte(goodConfig("careful", 3))}
				})
			case tt.data == nil:
				s.g.Expect(adminClient.Delete(s.ctx, configMapIn(s.namespace, "user-config"))).To(Succeed())
			default:
				s.setUserConfig("user-config", tt.data)
			}
			degraded := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, tt.reason)
			s.g.Expect(degraded.Message).To(ContainSubstring(tt.messageHint))
			s.g.Expect(degraded.Message).To(ContainSubstring("keeps running with its last good configuration"))
			s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(tt.reason)))
			// Counted for the operator's metrics (other tests refuse for the same reasons: at least once).
			s.g.Expect(operatorMetric("secondary_scheduler_operator_reconcile_errors_total",
				map[string]string{"kind": "Refused", "reason": string(tt.reason)})).To(BeNumerically(">=", 1))

			// Nothing running is lost: the last good config and Deployment are untouched.
			s.g.Consistently(func() string { return s.renderedConfig(cr) }, time.Second).Should(Equal(goodRendered))
			current := s.deployment(cr)
			s.g.Expect(current.UID).To(Equal(goodDeployment.UID))
			s.g.Expect(current.Spec).To(Equal(goodDeployment.Spec))

			// Fixing the input heals by itself.
			s.setUserConfig("user-config", map[string]string{"config.yaml": goodConfig("careful", 3)})
			s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
		})
	}
}

// setUserConfig creates or replaces a user's ConfigMap.
func (s *scenario) setUserConfig(name string, data map[string]string) {
	s.t.Helper()
	existing := configMapIn(s.namespace, name)
	if err := s.get(existing); apierrors.IsNotFound(err) {
		s.create(configMap(name, data))
		return
	}
	s.update(existing, func() { existing.Data, existing.BinaryData = data, nil })
}

func TestSchedulerNameConflictOlderWins(t *testing.T) {
	s := newScenario(t)
	other := newScenario(t)
	older := binPacking("first")
	older.Spec.SchedulerName = "contested"
	s.create(older)
	s.expectCondition(older, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	// Creation timestamps have a resolution of one second.
	time.Sleep(1100 * time.Millisecond)

	newer := binPacking("second")
	newer.Spec.SchedulerName = "contested"
	other.create(newer)
	conflict := other.expectCondition(newer, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonSchedulerNameConflict)
	other.g.Expect(conflict.Message).To(ContainSubstring(s.namespace + "/first"))
	other.g.Consistently(func() *appsv1.Deployment { return other.deployment(newer) }).Should(BeNil())
	s.expectCondition(older, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	// When the older is gone, the newer takes the name over by itself.
	s.g.Expect(adminClient.Delete(s.ctx, older)).To(Succeed())
	other.expectCondition(newer, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	other.g.Eventually(func() *appsv1.Deployment { return other.deployment(newer) }).ShouldNot(BeNil())
}

func TestIdleOperatorWritesNothing(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("quiet")
	s.createRunning(cr)
	s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionFalse, v1.ReasonRolloutComplete)
	// The Events of those changes (a new scheduler first reports Available=False and
	// Progressing=True, untold) follow the status write that made them, a moment later:
	// they are the operator's last writes, awaited before anything is taken as settled.
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).
		Should(ContainElements(string(v1.ReasonSchedulerReady), string(v1.ReasonRolloutComplete)))

	snapshot := func() map[string]string {
		versions := map[string]string{}
		_ = s.get(cr)
		versions["SecondaryScheduler"] = cr.ResourceVersion
		for _, child := range s.namespacedChildren(cr) {
			versions[child.GetObjectKind().GroupVersionKind().Kind+"/"+child.GetName()] = child.GetResourceVersion()
		}
		versions["events"] = strings.Join(s.eventReasons(cr), ",")
		return versions
	}
	settled := snapshot()
	s.g.Consistently(snapshot, 5*time.Second).Should(Equal(settled))
}

func TestAPIServerValidatesTheResource(t *testing.T) {
	s := newScenario(t)
	tests := []struct {
		name    string
		mutate  func(*v1.SecondaryScheduler)
		message string
	}{
		{"schedulerName default-scheduler", func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerName = "default-scheduler" }, "belongs to the cluster's own kube-scheduler"},
		{"neither profile nor config", func(cr *v1.SecondaryScheduler) { cr.Spec.Profile = nil }, "set spec.profile.type"},
		{"Custom without config", func(cr *v1.SecondaryScheduler) { cr.Spec.Profile.Type = v1.CustomProfile }, "profile type Custom needs spec.schedulerConfig"},
		{"binPacking arguments on Custom", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.CustomProfile, BinPacking: &v1.BinPackingArgs{}}
			cr.Spec.SchedulerConfig = "x"
		}, "profile.binPacking applies only to profile type BinPacking"},
		{"weight out of range", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": 0}}
		}, "between 1 and 100"},
		{"HA placement without HA", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Topology = &v1.Topology{Mode: v1.SingleReplica, HighlyAvailableTopology: &v1.HighlyAvailableTopology{}}
		}, "only allowed with mode HighlyAvailable"},
		{"unknown log level", func(cr *v1.SecondaryScheduler) { cr.Spec.LogLevel = "Loud" }, "Unsupported value"},
		{"metrics on BinPacking", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.Metrics = &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}
		}, "profile.metrics applies only to the load-aware profile types"},
		{"SignalFx without address", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{Provider: v1.SignalFxProvider}}
		}, "provider SignalFx needs metrics.address"},
		{"watcherAddress with address", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
				Metrics: &v1.LoadMetrics{Address: "http://prometheus:9090", WatcherAddress: "http://load-watcher:2020"}}
		}, "watcherAddress (an external load-watcher) excludes address"},
		{"two sources of one token", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{
				TokenSecretRef: &corev1.LocalObjectReference{Name: "t"}, ServiceAccountToken: &v1.ServiceAccountTokenAuth{}}}
		}, "tokenSecretRef and serviceAccountToken are two sources of one token"},
		{"ServiceAccount token for metrics-server", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{
				Provider: v1.KubernetesMetricsServerProvider, ServiceAccountToken: &v1.ServiceAccountTokenAuth{}}}
		}, "serviceAccountToken applies to provider Prometheus"},
		{"token lifetime under ten minutes", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{
				ServiceAccountToken: &v1.ServiceAccountTokenAuth{ExpirationSeconds: ptr.To[int64](60)}}}
		}, "should be greater than or equal to 600"},
		{"CA bundle and no verification", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{
				CABundle: &v1.ConfigMapKeyReference{Name: "ca"}, InsecureSkipVerify: ptr.To(true)}}
		}, "contradicts insecureSkipVerify: true"},
		{"recording rules for SignalFx", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{
				Provider: v1.SignalFxProvider, Address: "https://signalfx.example", InstallRecordingRules: true}}
		}, "installRecordingRules applies to provider Prometheus"},
		{"arguments of another load-aware type", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, LowRiskOverCommitment: &v1.LowRiskOverCommitmentArgs{},
				Metrics: &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}
		}, "profile.lowRiskOverCommitment applies only to profile type LowRiskOverCommitment"},
		{"risk weight above 1", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.LowRiskOverCommitmentProfile,
				LowRiskOverCommitment: &v1.LowRiskOverCommitmentArgs{RiskLimitWeights: map[corev1.ResourceName]v1.RiskWeight{"cpu": "1.5"}},
				Metrics:               &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}
		}, "riskLimitWeights.cpu in body should match"},
		{"target utilization above 100", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](120)},
				Metrics: &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}
		}, "should be less than or equal to 100"},
		{"staleAfter under 30s", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{StaleAfter: &metav1.Duration{Duration: 5 * time.Second}}}
		}, "staleAfter must be between 30s and 10m"},
		{"resumeAfter without the failsafe", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{ResumeAfter: &metav1.Duration{Duration: time.Minute}}}
		}, "resumeAfter applies to whenUnavailable: ScoreByRequests"},
		{"failsafe on metrics that are not probed", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{
				Provider: v1.KubernetesMetricsServerProvider, WhenUnavailable: v1.ScoreByRequests}}
		}, "apply to provider Prometheus without watcherAddress"},
		{"unknown failsafe", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{WhenUnavailable: "Guess"}}
		}, "Unsupported value"},
		{"address that is not a URL", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{Address: "prometheus:9090"}}
		}, "should match '^https?://'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := binPacking("invalid")
			cr.Namespace = s.namespace
			tt.mutate(cr)
			err := adminClient.Create(s.ctx, cr)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tt.message)))
		})
	}

	t.Run("schedulerName is immutable", func(t *testing.T) {
		cr := binPacking("fixed")
		s.create(cr)
		// Retried while the operator's own writes (finalizer, status) make the update conflict.
		NewWithT(t).Eventually(func() error {
			if err := s.get(cr); err != nil {
				return err
			}
			cr.Spec.SchedulerName = "renamed"
			return adminClient.Update(s.ctx, cr)
		}, eventuallyTimeout, pollInterval).Should(MatchError(ContainSubstring("spec.schedulerName cannot be changed")))
	})

	t.Run("kubectl shows the printer columns", func(t *testing.T) {
		cr := binPacking("columns")
		s.create(cr)
		s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
		g := NewWithT(t)
		admin, err := testEnv.AddUser(envtest.User{Name: "columns-reader", Groups: []string{"system:masters"}}, adminConfig)
		g.Expect(err).NotTo(HaveOccurred())
		kubectl, err := admin.Kubectl()
		g.Expect(err).NotTo(HaveOccurred())
		stdout, stderr, err := kubectl.Run("get", "secondaryschedulers", "-n", s.namespace, "columns")
		g.Expect(err).NotTo(HaveOccurred(), "kubectl: %s", readAll(stderr))
		output := readAll(stdout)
		g.Expect(output).To(MatchRegexp(`NAME\s+SCHEDULER\s+PROFILE\s+READY\s+AVAILABLE\s+DEGRADED\s+REASON\s+METRICS\s+PENDING\s+AGE`))
		g.Expect(output).To(MatchRegexp(`columns\s+columns\s+BinPacking\s+0\s+False\s+False\s+AsExpected`))
		// -o wide names every scheduler name served (a Custom configuration may serve several).
		stdout, stderr, err = kubectl.Run("get", "secondaryschedulers", "-n", s.namespace, "columns", "-o", "wide")
		g.Expect(err).NotTo(HaveOccurred(), "kubectl: %s", readAll(stderr))
		g.Expect(readAll(stdout)).To(MatchRegexp(`NAMES[\s\S]*\["columns"\]`))
	})
}

func TestObjectOfSomeoneElseIsNotTakenOver(t *testing.T) {
	s := newScenario(t)
	theirs := configMap("taken-scheduler-config", map[string]string{"owner": "another team"})
	s.create(theirs)
	cr := binPacking("taken")
	s.create(cr)
	taken := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonObjectNameTaken)
	s.g.Expect(taken.Message).To(ContainSubstring("ConfigMap " + s.namespace + "/taken-scheduler-config already exists"))
	s.g.Consistently(func() map[string]string { _ = s.get(theirs); return theirs.Data }).Should(Equal(map[string]string{"owner": "another team"}))
	s.g.Expect(s.deployment(cr)).To(BeNil(), "nothing is rolled out half-way")

	s.g.Expect(adminClient.Delete(s.ctx, theirs)).To(Succeed())
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(ContainSubstring("schedulerName: taken"))
}

func TestLoadAwareProfileRendersAndPrunesMetricsReader(t *testing.T) {
	s := newScenario(t)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "load-aware"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](55)},
			Metrics:           &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}},
	}
	s.create(cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Expect(s.renderedConfig(cr)).To(And(ContainSubstring("name: TargetLoadPacking"), ContainSubstring("targetUtilization: 55"),
		ContainSubstring("type: KubernetesMetricsServer")))
	// The operator, bound only to its shipped RBAC, grants metrics.k8s.io reads by binding
	// the shipped ClusterRole; it creates no ClusterRole.
	reader := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "metrics-reader")}}
	s.g.Eventually(func() error { return s.get(reader) }).Should(Succeed())
	s.g.Expect(reader.RoleRef.Name).To(Equal(render.SchedulerMetricsReaderClusterRole))
	s.g.Expect(s.clusterScopedChildren(cr)).To(ContainElement("ClusterRoleBinding/" + render.ClusterBindingName(cr, "metrics-reader")))

	s.update(cr, func() {
		// A closed loopback port: the probe that follows fails here, which this test ignores.
		cr.Spec.Profile.Metrics = &v1.LoadMetrics{Provider: v1.PrometheusProvider, Address: "http://127.0.0.1:9"}
	})
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(ContainSubstring("address: http://127.0.0.1:9"))
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(reader)) }).Should(BeTrue(), "the metrics-reader binding is pruned")
	s.g.Eventually(func() []string { return s.clusterScopedChildren(cr) }).Should(HaveLen(3))
}

// A load-aware scheduler's metrics are probed against a real Prometheus; missing metrics
// degrade it with the probe's reason, and it heals when they appear.
func TestLoadAwareMetricsAreProbed(t *testing.T) {
	s := newScenario(t)
	prometheus := promtest.Start(t)
	cr := targetLoadPacking("probed", prometheus.URL)
	node := s.ownNodePool(cr)
	s.create(cr)
	missing := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonRecordingRuleMissing)
	s.g.Expect(missing.Message).To(ContainSubstring("instance:node_cpu:ratio"))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonRecordingRuleMissing)
	s.g.Expect(s.deployment(cr)).NotTo(BeNil(), "the scheduler is deployed all the same")

	serveLoad(prometheus, node)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() *v1.MetricsStatus { _ = s.get(cr); return cr.Status.Metrics }).Should(
		HaveField("NodesWithMetrics", BeNumerically(">", 0)))

	prometheus.Stop()
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPrometheusUnreachable)

	// Another profile has no metrics to probe: the condition goes.
	s.update(cr, func() { cr.Spec.Profile = &v1.Profile{Type: v1.BinPackingProfile} })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionMetricsAvailable))).To(BeNil())
	s.g.Expect(cr.Status.Metrics).To(BeNil())
}

// Without an address, the operator looks for Prometheus as a platform engineer would,
// in order: OpenShift monitoring, a Prometheus Operator's Prometheus, well-known Services.
func TestPrometheusIsDiscovered(t *testing.T) {
	s := newScenario(t)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "discovering"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile,
			Metrics: &v1.LoadMetrics{Provider: v1.PrometheusProvider}}},
	}
	s.create(cr)
	// A Service a tenant made in its own namespace, with a name discovery looks for, is
	// not found: the operator would send it the scheduler's token.
	tenantTrap := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-server", Labels: map[string]string{"app.kubernetes.io/name": "prometheus"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9090}}}}
	s.create(tenantTrap)
	notFound := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonPrometheusNotFound)
	s.g.Expect(notFound.Message).To(And(ContainSubstring("thanos-querier"), ContainSubstring("openshift-monitoring")))
	s.g.Consistently(func() *v1.MetricsStatus { _ = s.get(cr); return cr.Status.Metrics }, time.Second).Should(BeNil())
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPrometheusNotFound)
	s.g.Expect(s.deployment(cr)).To(BeNil(), "no scheduler without its metrics source")
	// Both first reports are problems, each told by a Warning.
	s.g.Eventually(func() map[string]string {
		types := map[string]string{}
		for _, event := range s.eventsAbout(cr) {
			if event.Reason == string(v1.ReasonPrometheusNotFound) {
				types[event.Action] = event.Type
			}
		}
		return types
	}).Should(And(HaveKeyWithValue(string(v1.ConditionMetricsAvailable), corev1.EventTypeWarning),
		HaveKeyWithValue(string(v1.ConditionDegraded), corev1.EventTypeWarning)))

	discovered := func() string {
		_ = s.get(cr)
		if cr.Status.Metrics == nil {
			return ""
		}
		return cr.Status.Metrics.Address + " from " + cr.Status.Metrics.Source
	}
	service := func(namespace, name string, port int32, selector map[string]string) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		if err := adminClient.Create(s.ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "web", Port: port}}}}
		s.create(svc)
		t.Cleanup(func() { _ = adminClient.Delete(s.ctx, svc) })
	}

	service("monitoring", "prometheus-k8s", 9090, nil)
	s.g.Eventually(discovered).Should(Equal("http://prometheus-k8s.monitoring.svc:9090 from Service monitoring/prometheus-k8s (kube-prometheus)"))
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(ContainSubstring("address: http://prometheus-k8s.monitoring.svc:9090"))

	// A Prometheus Operator's Prometheus wins over well-known Services, through a Service
	// selecting its pods when the operator's own prometheus-operated is not there.
	s.create(prometheusCRD())
	prometheus := &unstructured.Unstructured{}
	prometheus.SetGroupVersionKind(promdiscovery.PrometheusGVK)
	prometheus.SetNamespace("observability")
	prometheus.SetName("main")
	service("observability", "other", 8080, map[string]string{"app": "grafana"})
	service("observability", "main-web", 9090, map[string]string{"prometheus": "main"})
	s.g.Eventually(func() error { return adminClient.Create(s.ctx, prometheus) }).Should(Succeed())
	t.Cleanup(func() { _ = adminClient.Delete(s.ctx, prometheus) })
	s.g.Eventually(discovered).Should(Equal(
		"http://main-web.observability.svc:9090 from Prometheus observability/main (Prometheus Operator), Service main-web (selects its pods)"))
	service("observability", "prometheus-operated", 9090, nil)
	s.g.Eventually(discovered).Should(Equal(
		"http://prometheus-operated.observability.svc:9090 from Prometheus observability/main (Prometheus Operator), Service prometheus-operated"))

	// OpenShift monitoring wins over both. Its thanos-querier needs a token and serves a
	// certificate of OpenShift's service CA, which every namespace gets in a ConfigMap.
	service("openshift-monitoring", "thanos-querier", 9091, nil)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonCABundleNotFound)
	s.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "openshift-service-ca.crt"},
		Data: map[string]string{"service-ca.crt": string(testCAPEM(t))}})
	s.g.Eventually(discovered).Should(Equal("https://thanos-querier.openshift-monitoring.svc:9091 from Service openshift-monitoring/thanos-querier (OpenShift monitoring)"))
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(And(
		ContainSubstring("address: https://thanos-querier.openshift-monitoring.svc:9091"), ContainSubstring("insecureSkipVerify: false")))
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.Metrics.Credentials).To(Equal("bound token of ServiceAccount " + s.namespace + "/discovering-scheduler-metrics (ClusterRole cluster-monitoring-view)"))
	s.g.Expect(cr.Status.Metrics.TrustedCA).To(Equal("ConfigMap " + s.namespace + "/openshift-service-ca.crt, key service-ca.crt"))
	container := s.deployment(cr).Spec.Template.Spec.Containers[0]
	s.g.Expect(container.Env).To(ContainElement(corev1.EnvVar{Name: "SSL_CERT_FILE", Value: render.TrustedCAFile}))
	// Probing a Service name needs cluster DNS, which this test host lacks.
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonPrometheusUnreachable)
}

// prometheusCRD is the Prometheus Operator's Prometheus kind, as far as discovery reads it.
func prometheusCRD() *apiextensionsv1.CustomResourceDefinition {
	return promtest.OperatorCRD("Prometheus", "prometheuses", "prometheus")
}

// A token from tokenSecretRef reaches the probe and the scheduler, only through Secrets.
func TestMetricsTokenStaysSecret(t *testing.T) {
	s := newScenario(t)
	const token = "e2e-bearer-token-0f9a"
	prometheus := promtest.Start(t)
	guarded := prometheus.TokenProxy(token)

	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "tokened"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: guarded.URL, TokenSecretRef: &corev1.LocalObjectReference{Name: "prometheus-token"}}}},
	}
	serveLoad(prometheus, s.ownNodePool(cr))
	// The Secret exists but is not labelled as meant for this scheduler: the operator
	// does not read it, and says so in the words it uses for a missing one, which tell
	// nobody whether a Secret of that name exists.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-token"}, Data: map[string][]byte{"other": []byte("x")}}
	s.create(secret)
	s.create(cr)
	notFound := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonTokenSecretNotFound)
	s.g.Expect(notFound.Message).To(ContainSubstring("does not exist or is not labelled " + v1.MetricsTokenForLabel + "=tokened"))
	// Labelled for another scheduler: still not this one's. A change of spec makes the
	// reconcile that reports it a new generation's, which comes after the label.
	s.update(secret, func() { secret.Labels = map[string]string{v1.MetricsTokenForLabel: "someone-else"} })
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonTokenSecretNotFound)
	s.update(secret, func() { secret.Labels = map[string]string{v1.MetricsTokenForLabel: cr.Name} })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonTokenKeyMissing)
	s.update(secret, func() { secret.Data = map[string][]byte{"token": []byte(token)} })
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	rendered := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.ConfigObjectName(cr)}}
	s.g.Expect(s.get(rendered)).To(Succeed())
	s.g.Expect(string(rendered.Data["config.yaml"])).To(ContainSubstring("token: " + token))
	s.g.Expect(s.deployment(cr).Spec.Template.Spec.Volumes).To(ContainElement(
		HaveField("VolumeSource.Secret", Not(BeNil()))), "the scheduler mounts the Secret")
	s.expectTokenHidden(token)

	// A new token rolls the scheduler (load-watcher reads it once) and is what the probe uses.
	hash := s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation]
	s.update(secret, func() { secret.Data = map[string][]byte{"token": []byte("rotated-token")} })
	s.g.Eventually(func() string { return s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation] }).ShouldNot(Equal(hash))
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonUnauthorized)
}

// A Prometheus behind kube-rbac-proxy with a private CA: the scheduler's ServiceAccount
// token passes a real TokenReview and SubjectAccessReview, the CA bundle verifies the
// certificate, and the token is renewed when due, without ever leaving Secrets.
func TestBoundMetricsTokenAndCABundle(t *testing.T) {
	s := newScenario(t)
	prometheus := promtest.Start(t)
	upstream, err := url.Parse(prometheus.URL)
	s.g.Expect(err).NotTo(HaveOccurred())
	proxy, err := rbacproxy.Start(rbacproxy.Options{ListenAddress: "127.0.0.1:0", Upstream: upstream,
		DNSNames: []string{"localhost"}, Authorization: rbacproxy.ThanosQuerierAccess, Config: adminConfig})
	s.g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = proxy.Close() })

	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "bound"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: proxy.URL, ServiceAccountToken: &v1.ServiceAccountTokenAuth{},
				CABundle: &v1.ConfigMapKeyReference{Name: "prometheus-ca"}}}},
	}
	serveLoad(prometheus, s.ownNodePool(cr))
	s.create(cr)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonCABundleNotFound)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonCABundleNotFound)
	bundle := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-ca"}, Data: map[string]string{"ca.crt": "not a certificate"}}
	s.create(bundle)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonCABundleInvalid)
	// Another CA than the one that signed the proxy's certificate: verification fails.
	s.update(bundle, func() { bundle.Data["ca.crt"] = string(testCAPEM(t)) })
	unreachable := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonPrometheusUnreachable)
	s.g.Expect(unreachable.Message).To(ContainSubstring("certificate"))
	// The right CA: the certificate is good, but ClusterRole cluster-monitoring-view does
	// not exist yet, so the proxy refuses the scheduler's identity.
	s.update(bundle, func() { bundle.Data["ca.crt"] = string(proxy.CAPEM) })
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonUnauthorized)
	monitoringView := rbacproxy.ClusterRoleAllowing("cluster-monitoring-view", rbacproxy.ThanosQuerierAccess)
	if err := adminClient.Create(s.ctx, monitoringView); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	s.g.Expect(s.get(cr)).To(Succeed())
	metrics := cr.Status.Metrics
	s.g.Expect(metrics.Credentials).To(Equal("bound token of ServiceAccount " + s.namespace + "/bound-scheduler-metrics (ClusterRole cluster-monitoring-view)"))
	s.g.Expect(metrics.TrustedCA).To(Equal("ConfigMap " + s.namespace + "/prometheus-ca, key ca.crt"))
	s.g.Expect(metrics.TokenRenewTime).NotTo(BeNil())
	// Renewal at 80% of the default lifetime of one day.
	s.g.Expect(time.Until(metrics.TokenRenewTime.Time)).To(BeNumerically("~", 24*time.Hour*4/5, 5*time.Minute))
	tokenSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.MetricsTokenSecretName(cr)}}
	s.g.Expect(s.get(tokenSecret)).To(Succeed())
	token := string(tokenSecret.Data["token"])
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("token: " + token))
	template := s.deployment(cr).Spec.Template
	s.g.Expect(template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "SSL_CERT_FILE", Value: render.TrustedCAFile}))
	s.g.Expect(template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.ConfigMap.LocalObjectReference.Name", "prometheus-ca")))
	s.expectTokenHidden(token)
	// A kept token is applied with its Secret's resourceVersion as a precondition: that
	// must not make each apply differ from the last, and wake the next.
	s.g.Consistently(func() string {
		_ = s.get(tokenSecret)
		return tokenSecret.ResourceVersion
	}, 3*time.Second).Should(Equal(tokenSecret.ResourceVersion), "the token Secret is not rewritten while nothing changes")

	// When the token is due, a new one replaces it and the scheduler restarts with it.
	configHash := template.Annotations[render.ConfigHashAnnotation]
	operatorClock.moveAhead(time.Until(metrics.TokenRenewTime.Time) + time.Minute)
	t.Cleanup(func() { operatorClock.moveAhead(0) })
	s.g.Eventually(func() string {
		_ = s.get(tokenSecret)
		return string(tokenSecret.Data["token"])
	}).ShouldNot(Equal(token))
	renewedToken := string(tokenSecret.Data["token"])
	operatorClock.moveAhead(0)
	s.g.Eventually(func() string { return s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation] }).ShouldNot(Equal(configHash))
	// The old token stays valid until it expires, so requests passing say nothing: the
	// operator's probes pass with the new one.
	s.g.Eventually(func() int { return proxy.ForwardedWith(renewedToken) }).Should(BeNumerically(">", 0),
		"the new token passes the proxy's reviews")
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)

	// A token that is no longer valid (here: overwritten) is refused by the proxy; the
	// operator then reviews it itself and replaces it.
	s.g.Expect(s.get(tokenSecret)).To(Succeed())
	renewed := string(tokenSecret.Data["token"])
	s.update(tokenSecret, func() { tokenSecret.Data["token"] = []byte("overwritten") })
	s.g.Eventually(func() string {
		_ = s.get(tokenSecret)
		return string(tokenSecret.Data["token"])
	}).Should(And(Not(Equal("overwritten")), Not(Equal(renewed)), Not(BeEmpty())))
	replacement := string(tokenSecret.Data["token"])
	s.g.Eventually(func() int { return proxy.ForwardedWith(replacement) }).Should(BeNumerically(">", 0), "the replacement passes")
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)

	// A CA bundle change restarts the scheduler: it reads SSL_CERT_FILE once.
	caHash := s.deployment(cr).Spec.Template.Annotations[render.TrustedCAHashAnnotation]
	s.update(bundle, func() { bundle.Data["ca.crt"] = string(proxy.CAPEM) + string(testCAPEM(t)) })
	s.g.Eventually(func() string { return s.deployment(cr).Spec.Template.Annotations[render.TrustedCAHashAnnotation] }).ShouldNot(Equal(caHash))

	// The token is bound to the Secret that keeps it: deleted, the token stops working at
	// once, not at its expiry, and the operator requests another.
	s.g.Expect(s.get(tokenSecret)).To(Succeed())
	kept := string(tokenSecret.Data["token"])
	s.g.Expect(tokenAuthenticates(s, kept)).To(BeTrue(), "the kept token authenticates")
	s.g.Expect(adminClient.Delete(s.ctx, tokenSecret)).To(Succeed())
	s.g.Eventually(func() bool { return tokenAuthenticates(s, kept) }).Should(BeFalse(), "a token whose Secret is gone is refused")
	s.g.Eventually(func() string {
		_ = s.get(tokenSecret)
		return string(tokenSecret.Data["token"])
	}).Should(And(Not(Equal(kept)), Not(BeEmpty())))
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)

	// The binding is the operator's to delete: it goes with the SecondaryScheduler.
	s.g.Expect(s.clusterScopedChildren(cr)).To(ContainElement("ClusterRoleBinding/" + render.ClusterBindingName(cr, "metrics-token")))
}

// tokenAuthenticates reports whether the API server authenticates token.
func tokenAuthenticates(s *scenario, token string) bool {
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	s.g.Expect(adminClient.Create(s.ctx, review)).To(Succeed())
	return review.Status.Authenticated
}

// The recording rules the operator installs, loaded into a real Prometheus the way the
// Prometheus Operator would, turn node-exporter's series (instance = address) into the
// ones load-watcher reads (instance = node name).
func TestRecordingRulesMakeMetricsAvailable(t *testing.T) {
	s := newScenario(t)
	prometheus := promtest.Start(t)
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{prometheusCRD(), promtest.OperatorCRD("PrometheusRule", "prometheusrules", "prometheusrule")} {
		if err := adminClient.Create(s.ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// A namespace among those the operator discovers Prometheus in.
	monitoring := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rules-monitoring"}}
	s.g.Expect(adminClient.Create(s.ctx, monitoring)).To(Succeed())
	operated := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: monitoring.Name, Name: "prometheus-operated"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9090}}}}
	s.g.Expect(adminClient.Create(s.ctx, operated)).To(Succeed())
	prometheusObject := &unstructured.Unstructured{}
	prometheusObject.SetGroupVersionKind(promdiscovery.PrometheusGVK)
	prometheusObject.SetNamespace(monitoring.Name)
	prometheusObject.SetName("k8s")
	s.g.Eventually(func() error { return adminClient.Create(s.ctx, prometheusObject) }).Should(Succeed())

	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "ruled"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: prometheus.URL, InstallRecordingRules: true}}},
	}
	serveNodeExporter(prometheus, s.ownNodePool(cr))
	s.create(cr)
	// The Prometheus has no ruleSelector: it would load no PrometheusRule, and the user is told.
	noSelector := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonRecordingRulesNotInstalled)
	s.g.Expect(noSelector.Message).To(ContainSubstring("has no spec.ruleSelector"))

	s.g.Eventually(func() error {
		if err := adminClient.Get(s.ctx, client.ObjectKeyFromObject(prometheusObject), prometheusObject); err != nil {
			return err
		}
		if err := unstructured.SetNestedStringMap(prometheusObject.Object, map[string]string{"role": "recording-rules"}, "spec", "ruleSelector", "matchLabels"); err != nil {
			return err
		}
		return adminClient.Update(s.ctx, prometheusObject)
	}).Should(Succeed())
	// The operator reconciles on its probe interval, not on Prometheus objects.
	rule := &unstructured.Unstructured{}
	rule.SetGroupVersionKind(render.PrometheusRuleGVK)
	ruleKey := client.ObjectKey{Namespace: monitoring.Name, Name: render.RecordingRuleName(cr)}
	s.g.Eventually(func() error { return adminClient.Get(s.ctx, ruleKey, rule) }).Should(Succeed())
	s.g.Expect(rule.GetLabels()).To(HaveKeyWithValue("role", "recording-rules"))
	missing := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonRecordingRuleMissing)
	s.g.Expect(missing.Message).To(ContainSubstring("The operator installed PrometheusRule " + ruleKey.String()))
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.Metrics.RecordingRules).To(Equal(ruleKey.String()))

	// Play the Prometheus Operator: load the PrometheusRule's groups into Prometheus.
	groups, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	s.g.Expect(err).NotTo(HaveOccurred())
	ruleFile, err := yaml.Marshal(map[string]any{"groups": groups})
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(prometheus.LoadRules(ruleFile)).To(Succeed())
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	// A second scheduler asking for the same rules shares them: two PrometheusRules
	// would record every series twice.
	second := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "ruled-too"},
		Spec: v1.SecondarySchedulerSpec{NodePool: cr.Spec.NodePool, Profile: &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile,
			Metrics: &v1.LoadMetrics{Address: prometheus.URL, InstallRecordingRules: true}}},
	}
	s.create(second)
	s.expectCondition(second, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.g.Eventually(func() string {
		_ = s.get(second)
		if second.Status.Metrics == nil {
			return ""
		}
		return second.Status.Metrics.RecordingRules
	}).Should(Equal(ruleKey.String()))
	ourRules := func() []string {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(render.PrometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))
		s.g.Expect(adminClient.List(s.ctx, list, client.InNamespace(monitoring.Name))).To(Succeed())
		names := make([]string, 0, len(list.Items))
		for _, item := range list.Items {
			names = append(names, item.GetName())
		}
		return names
	}
	s.g.Consistently(ourRules).Should(Equal([]string{ruleKey.Name}))

	// Someone's PrometheusRule that carries the scheduler's owner name, but not its UID,
	// is not the scheduler's to prune.
	s.g.Expect(s.get(cr)).To(Succeed())
	decoy := &unstructured.Unstructured{}
	decoy.SetGroupVersionKind(render.PrometheusRuleGVK)
	decoy.SetNamespace(s.namespace)
	decoy.SetName("team-rules")
	decoy.SetLabels(map[string]string{render.LabelManagedBy: render.ManagedByValue,
		render.LabelOwnerNamespace: cr.Namespace, render.LabelOwnerName: cr.Name, render.LabelOwnerUID: "not-" + string(cr.UID)})
	s.create(decoy)

	// Rules no longer asked for are deleted; the other scheduler then installs its own.
	s.update(cr, func() { cr.Spec.Profile.Metrics.InstallRecordingRules = false })
	s.g.Eventually(ourRules).Should(Equal([]string{render.RecordingRuleName(second)}))
	s.g.Expect(adminClient.Delete(s.ctx, second)).To(Succeed())
	s.g.Eventually(ourRules).Should(BeEmpty(), "the finalizer deletes them with their SecondaryScheduler")
	s.g.Expect(adminClient.Delete(s.ctx, cr)).To(Succeed())
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(cr)) }).Should(BeTrue(), "the finalizer lets the resource go")
	s.expectUnchanged(decoy)
}

// The samples users copy from, and the examples the OLM bundle shows in OperatorHub's
// console, are accepted by the API server as they are.
func TestSamplesAreValid(t *testing.T) {
	s := newScenario(t)
	samples, err := filepath.Glob(filepath.Join("..", "config", "samples", "operator_v1_*.yaml"))
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(samples).NotTo(BeEmpty())
	for _, path := range samples {
		data, err := os.ReadFile(path)
		s.g.Expect(err).NotTo(HaveOccurred())
		sample := &unstructured.Unstructured{}
		s.g.Expect(yaml.Unmarshal(data, &sample.Object)).To(Succeed(), path)
		sample.SetNamespace(s.namespace)
		s.g.Expect(adminClient.Create(s.ctx, sample, client.DryRunAll)).To(Succeed(), path)
	}

	data, err := os.ReadFile(filepath.Join("..", "bundle", "manifests", "secondary-scheduler-operator.clusterserviceversion.yaml"))
	s.g.Expect(err).NotTo(HaveOccurred())
	clusterServiceVersion := &unstructured.Unstructured{}
	s.g.Expect(yaml.Unmarshal(data, &clusterServiceVersion.Object)).To(Succeed())
	var examples []map[string]any
	s.g.Expect(json.Unmarshal([]byte(clusterServiceVersion.GetAnnotations()["alm-examples"]), &examples)).To(Succeed())
	s.g.Expect(examples).To(HaveLen(len(samples)), "one alm-example per sample")
	for _, example := range examples {
		object := &unstructured.Unstructured{Object: example}
		object.SetNamespace(s.namespace)
		s.g.Expect(adminClient.Create(s.ctx, object, client.DryRunAll)).To(Succeed(), "alm-example %s", object.GetName())
	}
}

// A refused spec, or managementState Unmanaged, applies nothing and so checks nothing:
// MetricsAvailable turns Unknown (NotChecked), saying what the last check found, instead
// of keeping an earlier True no one has observed since; once the spec is applied again it
// is probed again. Removed leaves no metrics in status at all.
func TestMetricsAreNotClaimedWhileNothingIsChecked(t *testing.T) {
	s := newScenario(t)
	prometheus := promtest.Start(t)
	cr := targetLoadPacking("unchecked", prometheus.URL)
	serveLoad(prometheus, s.ownNodePool(cr))
	s.create(cr)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	checkedGeneration := s.condition(cr, v1.ConditionMetricsAvailable).ObservedGeneration
	// probedAgain awaits MetricsAvailable True for cr's current generation.
	probedAgain := func() {
		s.t.Helper()
		s.g.Expect(s.get(cr)).To(Succeed())
		generation := cr.Generation
		s.g.Eventually(func() string {
			found := s.condition(cr, v1.ConditionMetricsAvailable)
			if found == nil {
				return "none"
			}
			return fmt.Sprintf("%s/%s/%d", found.Status, found.Reason, found.ObservedGeneration)
		}).Should(Equal(fmt.Sprintf("True/MetricsAvailable/%d", generation)))
	}

	s.update(cr, func() { cr.Spec.PriorityClassName = "absent" })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPriorityClassNotFound)
	refused := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionUnknown, v1.ReasonNotChecked)
	s.g.Expect(refused.Message).To(And(ContainSubstring("refused"),
		ContainSubstring(fmt.Sprintf("When last checked, for generation %d: True, MetricsAvailable", checkedGeneration))))
	s.update(cr, func() { cr.Spec.PriorityClassName = "" })
	probedAgain()

	s.update(cr, func() { cr.Spec.ManagementState = v1.Unmanaged })
	unmanaged := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionUnknown, v1.ReasonNotChecked)
	s.g.Expect(unmanaged.Message).To(ContainSubstring("Unmanaged"))
	s.update(cr, func() { cr.Spec.ManagementState = v1.Managed })
	probedAgain()

	s.update(cr, func() { cr.Spec.ManagementState = v1.Removed })
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonRemoved)
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionMetricsAvailable))).To(BeNil())
	s.g.Expect(cr.Status.Metrics).To(BeNil())
}
