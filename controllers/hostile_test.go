package controllers

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// hostileRow is one hostile change to a running, healthy SecondaryScheduler: a spec
// change, or for a Custom resource a change of its ConfigMap.
type hostileRow struct {
	name   string
	target *v1.SecondaryScheduler
	// mutate changes the target's spec; nil for a ConfigMap row.
	mutate func(*v1.SecondaryScheduler)
	// patch is a JSON merge patch of the target, for a value that a typed change cannot
	// carry without parsing it: a quantity that takes minutes to parse.
	patch string
	// configMap changes the Custom target's ConfigMap; nil for a spec row.
	configMap func(*corev1.ConfigMap)
	// refusedField is the field the API server names when it refuses the change; empty
	// when the API accepts it and the operator refuses it with reason.
	refusedField string
	reason       v1.ConditionReason
}

// Hostile spec and configuration changes to running schedulers are refused, by the API
// server or by the operator with a reason, without touching what runs and without a
// metrics token ever leaving its Secret; undoing them heals.
func TestHostileInputTable(t *testing.T) {
	s := newScenario(t)
	const token = "hostile-bearer-token-5d0c77e1"
	prometheus := promtest.Start(t)
	guarded := prometheus.TokenProxy(token)
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "metrics-token", Labels: map[string]string{v1.MetricsTokenForLabel: "hostile-load-aware"}},
		Data: map[string][]byte{"token": []byte(token)}})
	const configName = "bespoke-config"
	goodCustomConfig := goodConfig("bespoke", 3)
	s.create(configMap(configName, map[string]string{"config.yaml": goodCustomConfig}))

	packer := binPacking("hostile-packer")
	loadAware := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "hostile-load-aware"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: guarded.URL, TokenSecretRef: &corev1.LocalObjectReference{Name: "metrics-token"}}}},
	}
	serveLoad(prometheus, s.ownNodePool(loadAware))
	bespoke := custom("bespoke", configName)
	s.create(packer, loadAware, bespoke)
	s.expectCondition(loadAware, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	running := []*v1.SecondaryScheduler{packer, loadAware, bespoke}
	for _, cr := range running {
		s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
		s.markDeploymentReady(cr)
		s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	}
	// The token is live: it reaches the scheduler through its rendered Secret, so a leak
	// of it elsewhere would be found by the searches below.
	s.g.Expect(s.renderedConfig(loadAware)).To(ContainSubstring("token: " + token))
	s.expectTokenHidden(token)
	baselines := map[string]*v1.SecondarySchedulerSpec{}
	for _, cr := range running {
		s.g.Expect(s.get(cr)).To(Succeed())
		baselines[cr.Name] = cr.Spec.DeepCopy()
	}

	invalidImage := func(image string) func(*v1.SecondaryScheduler) {
		return func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = image }
	}
	setConfig := func(text string) func(*corev1.ConfigMap) {
		return func(cm *corev1.ConfigMap) { cm.Data, cm.BinaryData = map[string]string{"config.yaml": text}, nil }
	}
	rows := []hostileRow{
		{name: "address with userinfo", target: loadAware, refusedField: "spec.profile.metrics.address", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.Metrics.Address = "https://user:pw@127.0.0.1:9090"
		}},
		{name: "watcherAddress with userinfo", target: loadAware, refusedField: "spec.profile.metrics.watcherAddress", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.Metrics = &v1.LoadMetrics{WatcherAddress: "http://user:pw@127.0.0.1:2020"}
		}},
		{name: "400-digit defaultRequestsMultiplier", target: loadAware, refusedField: "spec.profile.targetLoadPacking.defaultRequestsMultiplier", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.TargetLoadPacking = &v1.TargetLoadPackingArgs{DefaultRequestsMultiplier: strings.Repeat("9", 400)}
		}},
		{name: "defaultRequestsMultiplier below 1", target: loadAware, refusedField: "spec.profile.targetLoadPacking.defaultRequestsMultiplier", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.TargetLoadPacking = &v1.TargetLoadPackingArgs{DefaultRequestsMultiplier: "0.5"}
		}},
		{name: "safeVarianceSensitivity 0", target: loadAware, refusedField: "spec.profile.loadVariationRiskBalancing.safeVarianceSensitivity", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.Type = v1.LoadVariationRiskBalancingProfile
			cr.Spec.Profile.LoadVariationRiskBalancing = &v1.LoadVariationRiskBalancingArgs{SafeVarianceSensitivity: "0"}
		}},
		{name: "safeVarianceMargin above 100", target: loadAware, refusedField: "spec.profile.loadVariationRiskBalancing.safeVarianceMargin", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.Type = v1.LoadVariationRiskBalancingProfile
			cr.Spec.Profile.LoadVariationRiskBalancing = &v1.LoadVariationRiskBalancingArgs{SafeVarianceMargin: "100.01"}
		}},
		{name: "schedulerName default-scheduler", target: packer, refusedField: "spec.schedulerName", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.SchedulerName = v1.DefaultSchedulerName
		}},
		{name: "maxReplicas 100", target: packer, refusedField: "spec.topology.highlyAvailableTopology.maxReplicas", mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{MaxReplicas: ptr.To[int32](100)}}
		}},
		{name: "image with upper case", target: packer, reason: v1.ReasonInvalidImage, mutate: invalidImage("UPPER/Case:tag")},
		{name: "image with spaces", target: packer, reason: v1.ReasonInvalidImage, mutate: invalidImage("registry.example/kube scheduler:v1 --privileged")},
		{name: "image with upper case on the load-aware scheduler", target: loadAware, reason: v1.ReasonInvalidImage, mutate: invalidImage("UPPER/Case:tag")},
		{name: "metrics token bound to cluster-admin", target: loadAware, reason: v1.ReasonClusterRoleNotAllowed, mutate: func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.Metrics.TokenSecretRef = nil
			cr.Spec.Profile.Metrics.ServiceAccountToken = &v1.ServiceAccountTokenAuth{ClusterRole: "cluster-admin"}
		}},
		{name: "YAML alias in leaderElection", target: bespoke, reason: v1.ReasonInvalidConfig,
			configMap: setConfig(goodCustomConfig + "leaderElection: &le\n  leaderElect: true\nclientConnection: *le\n")},
		{name: "config too large", target: bespoke, reason: v1.ReasonConfigTooLarge,
			configMap: setConfig(goodCustomConfig + "# " + strings.Repeat("x", 70000) + "\n")},
		{name: "config under binaryData", target: bespoke, reason: v1.ReasonConfigKeyMissing, configMap: func(cm *corev1.ConfigMap) {
			cm.Data, cm.BinaryData = nil, map[string][]byte{"config.yaml": []byte(goodCustomConfig)}
		}},
		{name: "profile named default-scheduler", target: bespoke, reason: v1.ReasonDefaultSchedulerClaimed,
			configMap: setConfig(goodCustomConfig + "- schedulerName: default-scheduler\n")},

		// Quantities whose parse takes minutes and hundreds of megabytes (issue 39).
		{name: "defaultRequests with an absurd exponent", target: loadAware, refusedField: "spec.profile.targetLoadPacking.defaultRequests",
			patch: `{"spec": {"profile": {"targetLoadPacking": {"defaultRequests": {"cpu": "1e-99999999"}}}}}`},
		{name: "resources with an absurd exponent", target: packer, refusedField: "spec.resources.requests",
			patch: `{"spec": {"resources": {"requests": {"memory": "1E+99999999"}}}}`},
		{name: "resources of any name", target: packer, refusedField: "spec.resources.limits",
			patch: `{"spec": {"resources": {"limits": {"hugepages-2Mi": "1e-99999999"}}}}`},
		{name: "extender divisor with an absurd exponent", target: packer, refusedField: "spec.extenders",
			patch: `{"spec": {"extenders": [{"name": "a", "filterVerb": "filter", "container": {"image": "registry.example/extender:v1", "port": 8888,
				"env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1e-99999999"}}}]}}]}}`},
		{name: "Custom defaultRequests with an absurd exponent", target: bespoke, reason: v1.ReasonInvalidConfig,
			configMap: setConfig(goodCustomConfig + "  pluginConfig:\n  - name: TargetLoadPacking\n    args:\n      defaultRequests: {cpu: '1e-99999999'}\n")},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			s := s.forSubtest(t)
			// Each row starts from the healthy baseline, whatever the row before it left
			// (a change it failed to undo), so that one failure does not cascade.
			deployments := s.restoreBaseline(running, baselines, configName, goodCustomConfig)
			cr := row.target
			s.g.Expect(s.get(cr)).To(Succeed())
			before := cr.DeepCopy()
			userConfig := configMapIn(s.namespace, configName)

			if row.mutate != nil || row.patch != "" {
				var err error
				if row.patch != "" {
					err = s.tryPatch(cr, row.patch)
				} else {
					err = s.tryUpdate(cr, func() { row.mutate(cr) })
				}
				if row.refusedField != "" {
					s.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the API server refuses the change as invalid: %v", err)
					s.g.Expect(err).To(MatchError(ContainSubstring(row.refusedField)))
				} else {
					s.g.Expect(err).NotTo(HaveOccurred(), "the API server accepts the change; the operator must refuse it")
				}
			} else {
				s.update(userConfig, func() { row.configMap(userConfig) })
			}

			if row.refusedField != "" {
				s.g.Expect(s.get(cr)).To(Succeed())
				s.g.Expect(cr.Generation).To(Equal(before.Generation), "a refused update changes nothing")
			} else {
				degraded := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, row.reason)
				s.g.Expect(degraded.Message).To(ContainSubstring("keeps running with its last good configuration"))
				s.expectCondition(cr, v1.ConditionStalled, metav1.ConditionTrue, row.reason)
				s.g.Expect(s.get(cr)).To(Succeed())
				if row.mutate != nil {
					s.g.Expect(cr.Generation).To(BeNumerically(">", before.Generation))
				}
				s.g.Expect(cr.Status.ObservedGeneration).To(Equal(cr.Generation), "the refusal is observed")
				s.g.Eventually(func() []string { return s.eventNotes(cr, row.reason) }).Should(
					ContainElement(HavePrefix("Degraded=True: "+degraded.Message[:min(60, len(degraded.Message))])), "an Event tells the refusal")
				// What runs keeps running: its pods still run the Deployment's template.
				s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
			}
			s.expectDeploymentsUnchanged(running, deployments)
			s.expectTokenHidden(token)

			if row.refusedField != "" {
				return // nothing changed, nothing to undo
			}
			// Undo the change: the operator, still reconciling, heals to the same scheduler.
			if row.mutate != nil {
				s.update(cr, func() { cr.Spec = *before.Spec.DeepCopy() })
			}
			if row.configMap != nil {
				s.update(userConfig, func() { setConfig(goodCustomConfig)(userConfig) })
			}
			s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
			s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
			s.expectDeploymentsUnchanged(running, deployments)
			s.expectTokenHidden(token)
		})
	}
}

// restoreBaseline puts the specs of running and the Custom configuration back as they
// were when all ran healthy, waits until they do again, and snapshots their Deployments.
func (s *scenario) restoreBaseline(running []*v1.SecondaryScheduler, baselines map[string]*v1.SecondarySchedulerSpec,
	configName, goodConfig string) map[string]deploymentSnapshot {
	s.t.Helper()
	for _, cr := range running {
		s.g.Expect(s.get(cr)).To(Succeed())
		if !equality.Semantic.DeepEqual(cr.Spec, *baselines[cr.Name]) {
			s.update(cr, func() { cr.Spec = *baselines[cr.Name].DeepCopy() })
		}
	}
	userConfig := configMapIn(s.namespace, configName)
	s.g.Expect(s.get(userConfig)).To(Succeed())
	if userConfig.Data["config.yaml"] != goodConfig || len(userConfig.BinaryData) > 0 {
		s.update(userConfig, func() { userConfig.Data, userConfig.BinaryData = map[string]string{"config.yaml": goodConfig}, nil })
	}
	snapshots := map[string]deploymentSnapshot{}
	for _, cr := range running {
		s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
		s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
		snapshots[cr.Name] = s.snapshotDeployment(cr)
	}
	return snapshots
}

// forSubtest is s for a subtest t: its failures fail t.
func (s *scenario) forSubtest(t *testing.T) *scenario {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(eventuallyTimeout)
	g.SetDefaultEventuallyPollingInterval(pollInterval)
	g.SetDefaultConsistentlyDuration(2 * time.Second)
	g.SetDefaultConsistentlyPollingInterval(pollInterval)
	return &scenario{t: t, g: g, ctx: s.ctx, namespace: s.namespace}
}

// tryUpdate re-reads object, applies mutate and writes it, retrying on conflicts only,
// and returns what the API server answered.
func (s *scenario) tryUpdate(object client.Object, mutate func()) error {
	s.t.Helper()
	var err error
	s.g.Eventually(func() bool {
		if err = s.get(object); err != nil {
			return false
		}
		mutate()
		err = adminClient.Update(s.ctx, object)
		return !apierrors.IsConflict(err)
	}).Should(BeTrue(), "update %s", object.GetName())
	return err
}

// tryPatch applies patch, a JSON merge patch, to object and returns what the API server
// answered. It goes through an unstructured copy, so that an answer holding the patched
// object is not decoded into object's types (a quantity would be parsed).
func (s *scenario) tryPatch(object client.Object, patch string) error {
	s.t.Helper()
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(v1.GroupVersion.WithKind("SecondaryScheduler"))
	target.SetNamespace(object.GetNamespace())
	target.SetName(object.GetName())
	return adminClient.Patch(s.ctx, target, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// deploymentSnapshot is what identifies a running Deployment and the pods it runs.
type deploymentSnapshot struct {
	UID         types.UID
	Generation  int64
	Annotations map[string]string
}

func (s *scenario) snapshotDeployment(cr *v1.SecondaryScheduler) deploymentSnapshot {
	s.t.Helper()
	deployment := s.deployment(cr)
	s.g.Expect(deployment).NotTo(BeNil(), "Deployment of %s", cr.Name)
	s.g.Expect(deployment.Spec.Template.Annotations).To(HaveKey(render.ConfigHashAnnotation))
	return deploymentSnapshot{UID: deployment.UID, Generation: deployment.Generation, Annotations: deployment.Spec.Template.Annotations}
}

// expectDeploymentsUnchanged checks, for a while, that the Deployments of running are
// the ones snapshotted: same object, same spec, same pod template annotations.
func (s *scenario) expectDeploymentsUnchanged(running []*v1.SecondaryScheduler, snapshots map[string]deploymentSnapshot) {
	s.t.Helper()
	current := func() map[string]deploymentSnapshot {
		now := map[string]deploymentSnapshot{}
		for _, cr := range running {
			if deployment := s.deployment(cr); deployment != nil {
				now[cr.Name] = deploymentSnapshot{UID: deployment.UID, Generation: deployment.Generation, Annotations: deployment.Spec.Template.Annotations}
			}
		}
		return now
	}
	s.g.Consistently(current, 500*time.Millisecond).Should(Equal(snapshots))
}

// eventNotes lists the notes of the Events about cr with a reason.
func (s *scenario) eventNotes(cr *v1.SecondaryScheduler, reason v1.ConditionReason) []string {
	list, err := adminClientset.EventsV1().Events(cr.Namespace).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var notes []string
	for _, event := range list.Items {
		if event.Regarding.UID == cr.UID && event.Reason == string(reason) {
			notes = append(notes, event.Note)
		}
	}
	return notes
}

// Available says that the scheduler serves its name, and Reconciling whether it does as
// the current configuration says: while a ready pod of an older one leads, the scheduler
// is Available (it schedules) and still Reconciling, whatever the Deployment's status says.
func TestStatusReconcilingUntilTheCurrentConfigurationLeads(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("current")
	s.createRunning(cr)
	s.expectCondition(cr, v1.ConditionReconciling, metav1.ConditionFalse, v1.ReasonReconciled)
	oldHash := s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation]

	// A change of the scheduler's configuration: the old pod still schedules, as before.
	s.update(cr, func() {
		cr.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 3}}
	})
	s.g.Eventually(func() string { return s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation] }).ShouldNot(Equal(oldHash))
	newHash := s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation]
	stale := s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonServingPreviousConfiguration)
	s.g.Expect(stale.Message).To(And(ContainSubstring("a pod of an earlier configuration, holds Lease"), ContainSubstring(newHash)))
	s.expectConditionStatus(cr, v1.ConditionReconciling, metav1.ConditionTrue)
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.ObservedGeneration).To(Equal(cr.Generation))
	s.g.Expect(cr.Status.ConfigHash).To(Equal(newHash))

	// The Deployment's status claims the rollout is complete while only the old pod is
	// ready (as when the pod list lags): the pods decide, and the operator still reconciles.
	s.claimRolloutComplete(s.deployment(cr))
	s.g.Consistently(func() string { return s.availableAndReconciling(cr) }, time.Second).Should(
		Equal("Available=True/ServingPreviousConfiguration Reconciling=True/RollingOut"))
	s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionTrue, v1.ReasonRollingOut)

	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.expectCondition(cr, v1.ConditionReconciling, metav1.ConditionFalse, v1.ReasonReconciled)

	// A change of the pod template alone (the scheduler's verbosity, not its configuration
	// file): the ready pod runs the previous template, so it is not the current one either.
	// The Deployment's status is left saying the rollout is complete, as above.
	before := s.deployment(cr)
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	s.g.Eventually(func() []string { return s.deployment(cr).Spec.Template.Spec.Containers[0].Command }).Should(ContainElement("--v=4"))
	after := s.deployment(cr)
	s.g.Expect(after.Generation).To(BeNumerically(">", before.Generation), "the pod template changed")
	s.claimRolloutComplete(after)
	s.g.Eventually(func() string { return s.availableAndReconciling(cr) }, 10*time.Second).Should(
		Equal("Available=True/ServingPreviousConfiguration Reconciling=True/RollingOut"),
		func() string {
			available := s.condition(cr, v1.ConditionAvailable)
			if available == nil {
				return "no Available condition"
			}
			return "the ready pod runs --v=2, the Deployment's template --v=4; Available says: " + available.Message
		})
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
}

// claimRolloutComplete writes a status of deployment saying its one replica is updated
// and available, with the conditions the Deployment controller then sets (which
// markDeploymentReady's status has not, so that it is a change the operator sees).
func (s *scenario) claimRolloutComplete(deployment *appsv1.Deployment) {
	s.t.Helper()
	deployment.Status = appsv1.DeploymentStatus{ObservedGeneration: deployment.Generation,
		Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
	s.g.Expect(adminClient.Status().Update(s.ctx, deployment)).To(Succeed())
}

// availableAndReconciling tells cr's Available and Reconciling conditions of the current
// generation, as "Available=Status/Reason Reconciling=Status/Reason".
func (s *scenario) availableAndReconciling(cr *v1.SecondaryScheduler) string {
	var parts []string
	for _, conditionType := range []v1.ConditionType{v1.ConditionAvailable, v1.ConditionReconciling} {
		condition := s.condition(cr, conditionType)
		if condition == nil {
			parts = append(parts, string(conditionType)+"=none")
			continue
		}
		parts = append(parts, string(conditionType)+"="+string(condition.Status)+"/"+condition.Reason)
	}
	return strings.Join(parts, " ")
}

// expectConditionStatus waits until cr's condition of the current generation has a status.
func (s *scenario) expectConditionStatus(cr *v1.SecondaryScheduler, conditionType v1.ConditionType, status metav1.ConditionStatus) {
	s.t.Helper()
	s.g.Eventually(func() metav1.ConditionStatus {
		if condition := s.condition(cr, conditionType); condition != nil {
			return condition.Status
		}
		return "none"
	}).Should(Equal(status), "condition %s of %s", conditionType, cr.Name)
}

// A HighlyAvailable scheduler schedules only once a replica leads: ready pods without a
// Lease holder are not Available.
func TestStatusHighlyAvailableNeedsALeader(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("leader")
	cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{MaxReplicas: ptr.To[int32](3)}}
	// One replica per node the pods may run on: three nodes of this test's own.
	cr.Spec.NodeSelector = map[string]string{placementTestLabel: s.namespace}
	for _, name := range []string{"a", "b", "c"} {
		s.createLabelledNode(s.namespace+"-"+name, cr.Spec.NodeSelector)
	}
	s.create(cr)
	s.g.Eventually(func() int32 {
		if deployment := s.deployment(cr); deployment != nil {
			return ptr.Deref(deployment.Spec.Replicas, 0)
		}
		return 0
	}).Should(Equal(int32(3)))
	s.markPodsReady(cr, 3)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoLeader)
	// The operator may have counted the pods while they were being made; it polls again.
	s.g.Eventually(func() string {
		if available := s.condition(cr, v1.ConditionAvailable); available != nil {
			return available.Message
		}
		return ""
	}).Should(ContainSubstring("3 of 3 scheduler pods are ready but none holds Lease " + s.namespace + "/" + render.LeaseName(cr)))
	s.expectCondition(cr, v1.ConditionReconciling, metav1.ConditionTrue, v1.ReasonNoLeader)

	// A replica takes the Lease.
	s.holdLease(cr)
	s.g.Eventually(func() string {
		if available := s.condition(cr, v1.ConditionAvailable); available != nil {
			return string(available.Status) + "/" + available.Reason
		}
		return "none"
	}, 8*time.Second).Should(Equal("True/SchedulerReady"), "Available once a replica holds the Lease")
	available := s.condition(cr, v1.ConditionAvailable)
	s.g.Expect(available.Message).To(ContainSubstring("3 of 3 scheduler pods ready with the current configuration"))
	s.expectCondition(cr, v1.ConditionReconciling, metav1.ConditionFalse, v1.ReasonReconciled)
}

// A rollout is done only once a pod of the new configuration leads: a new pod is ready
// (its probes pass) while the old one still holds the Lease and schedules as the old
// configuration says, until it stops. Meanwhile the scheduler serves its name (Available
// True, ServingPreviousConfiguration) and the rollout goes on (Progressing, Reconciling),
// so kubectl wait on Reconciling=False returns once pods are placed as the new
// generation asks.
func TestStatusInEffectOnceTheCurrentConfigurationLeads(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("handover")
	s.createRunning(cr)
	oldHash := s.deployment(cr).Spec.Template.Annotations[render.PodTemplateHashAnnotation]

	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	var template *corev1.PodTemplateSpec
	s.g.Eventually(func() string {
		template = s.deployment(cr).Spec.Template.DeepCopy()
		return template.Annotations[render.PodTemplateHashAnnotation]
	}).ShouldNot(Equal(oldHash))
	next := render.WorkloadName(cr) + "-next"
	s.addReadyPod(cr, next, template)
	s.markRolledOut(cr)
	available := s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonServingPreviousConfiguration)
	s.g.Expect(available.Message).To(ContainSubstring(render.WorkloadName(cr) + "-0, a pod of an earlier configuration, holds Lease"))
	handingOver := s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionTrue, v1.ReasonHandingOver)
	s.g.Expect(handingOver.Message).To(ContainSubstring("but " + render.WorkloadName(cr) + "-0_1234, of an earlier configuration, holds Lease"))
	s.expectCondition(cr, v1.ConditionReconciling, metav1.ConditionTrue, v1.ReasonHandingOver)

	// The old pod stops and releases the Lease, which nobody holds for a moment.
	s.g.Expect(adminClient.Delete(s.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: render.WorkloadName(cr) + "-0"}},
		client.GracePeriodSeconds(0))).To(Succeed())
	s.holdLeaseAs(cr, "")
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoLeader)
	s.holdLeaseAs(cr, next+"_5678")
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionFalse, v1.ReasonRolloutComplete)
	s.expectCondition(cr, v1.ConditionReconciling, metav1.ConditionFalse, v1.ReasonReconciled)
}

// markRolledOut says in the Deployment's status that its controller rolled out the
// current template to every replica.
func (s *scenario) markRolledOut(cr *v1.SecondaryScheduler) {
	s.t.Helper()
	deployment := s.deployment(cr)
	replicas := *deployment.Spec.Replicas
	s.markDeploymentRolledOut(deployment, replicas, replicas)
}

// kstatus computes the status that sigs.k8s.io/cli-utils/pkg/kstatus/status (used by
// kubectl wait --for=..., Flux, Argo CD, kpt) reads from a custom resource it has no
// specific rules for. Its generic rules, in order (checkGenericProperties, then the
// Reconciling and Stalled conditions of its "abnormal-true" convention):
//   - metadata.deletionTimestamp set: Terminating;
//   - status.observedGeneration present and different from metadata.generation: InProgress
//     (the field is absent, and the check skipped, when it is zero: it is omitempty);
//   - condition Reconciling True: InProgress;
//   - condition Stalled True: Failed;
//   - otherwise Current.
func kstatus(cr *v1.SecondaryScheduler) string {
	switch {
	case cr.DeletionTimestamp != nil:
		return "Terminating"
	case cr.Status.ObservedGeneration != 0 && cr.Status.ObservedGeneration != cr.Generation:
		return "InProgress"
	case meta.IsStatusConditionTrue(cr.Status.Conditions, string(v1.ConditionReconciling)):
		return "InProgress"
	case meta.IsStatusConditionTrue(cr.Status.Conditions, string(v1.ConditionStalled)):
		return "Failed"
	default:
		return "Current"
	}
}

// describeStatus tells cr's generation, observed generation and conditions, for a failure.
func describeStatus(cr *v1.SecondaryScheduler) string {
	var text strings.Builder
	text.WriteString("generation " + strconv.FormatInt(cr.Generation, 10) + ", observedGeneration " + strconv.FormatInt(cr.Status.ObservedGeneration, 10))
	for _, condition := range cr.Status.Conditions {
		text.WriteString("; " + condition.Type + "=" + string(condition.Status) + "/" + condition.Reason +
			" (generation " + strconv.FormatInt(condition.ObservedGeneration, 10) + "): " + condition.Message)
	}
	return text.String()
}

// A kstatus reader (kubectl wait, Flux, Argo CD) reads the right state from the status
// in every phase of a SecondaryScheduler's life.
func TestKstatusReadsEveryState(t *testing.T) {
	s := newScenario(t)
	read := func() string {
		current := &v1.SecondaryScheduler{}
		if err := adminClient.Get(s.ctx, client.ObjectKey{Namespace: s.namespace, Name: "kstatus-states"}, current); err != nil {
			return err.Error()
		}
		return kstatus(current)
	}
	// observed waits until the operator wrote status for the resource's generation.
	observed := func(cr *v1.SecondaryScheduler) {
		s.t.Helper()
		s.g.Eventually(func() bool {
			return s.get(cr) == nil && cr.Status.ObservedGeneration == cr.Generation
		}).Should(BeTrue(), "status.observedGeneration reaches metadata.generation")
	}
	userConfig := configMap("states-config", map[string]string{"config.yaml": goodConfig("kstatus-states", 1)})
	cr := custom("kstatus-states", "states-config")
	s.create(userConfig, cr)

	// Created, no pod ready yet.
	observed(cr)
	s.g.Consistently(read, time.Second).Should(Equal("InProgress"), "created, no ready pod")

	s.markDeploymentReady(cr)
	s.g.Eventually(read).Should(Equal("Current"), "a ready pod runs the current configuration")

	// A configuration the operator cannot use: nothing to wait for but the user.
	s.g.Expect(adminClient.Delete(s.ctx, configMapIn(s.namespace, "states-config"))).To(Succeed())
	s.g.Eventually(read).Should(Equal("Failed"), "the ConfigMap is missing")
	s.expectCondition(cr, v1.ConditionStalled, metav1.ConditionTrue, v1.ReasonConfigMapNotFound)

	// Fixed with another configuration: rolling out, then Current once its pod is ready.
	s.create(configMap("states-config", map[string]string{"config.yaml": goodConfig("kstatus-states", 2)}))
	s.g.Eventually(read).Should(Equal("InProgress"), "the fixed configuration rolls out")
	s.markDeploymentReady(cr)
	s.g.Eventually(read).Should(Equal("Current"), "the fixed configuration runs")

	// A spec change: from the update on, no reader may see Current before it runs. Right
	// after the update the status is stale; observedGeneration tells so.
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	if kstatus(cr) == "Current" {
		s.g.Expect(cr.Status.ObservedGeneration).To(Equal(cr.Generation), "Current read from a stale status")
	}
	s.g.Expect(kstatus(cr)).To(Equal("InProgress"), "the status of the previous generation is stale")
	// Read as a kstatus poller would, often, while the operator reconciles the change.
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		seen := &v1.SecondaryScheduler{}
		s.g.Expect(adminClient.Get(s.ctx, client.ObjectKeyFromObject(cr), seen)).To(Succeed())
		s.g.Expect(kstatus(seen)).To(Equal("InProgress"), func() string {
			return describeStatus(seen) + "; the Deployment's pod template runs --v=2 in its pods, --v=4 in its spec"
		})
	}
	observed(cr)
	s.g.Expect(read()).To(Equal("InProgress"))
	s.markDeploymentReady(cr)
	s.g.Eventually(read).Should(Equal("Current"))

	// Unmanaged: the operator only reports; the scheduler runs as it is.
	s.update(cr, func() { cr.Spec.ManagementState = v1.Unmanaged })
	observed(cr)
	s.g.Eventually(read).Should(Equal("Current"), "Unmanaged with a ready scheduler")

	// Removed: done once the scheduler's pods are gone, as the garbage collector and the
	// kubelet would make them go.
	s.update(cr, func() { cr.Spec.ManagementState = v1.Removed })
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).Should(BeNil())
	s.g.Expect(adminClient.DeleteAllOf(s.ctx, &corev1.Pod{}, client.InNamespace(s.namespace),
		client.MatchingLabels(render.PodSelector(cr)), client.GracePeriodSeconds(0))).To(Succeed())
	observed(cr)
	s.g.Eventually(read).Should(Equal("Current"), "Removed, every object deleted")

	// Unmanaged with nothing deployed: the operator will not act, so nothing is in progress.
	s.update(cr, func() { cr.Spec.ManagementState = v1.Unmanaged })
	observed(cr)
	s.g.Eventually(read, 10*time.Second).Should(Equal("Current"), func() string {
		return "Unmanaged with nothing deployed: " + s.availableAndReconciling(cr)
	})

	// Deleted while something else holds it: Terminating.
	s.update(cr, func() { controllerutil.AddFinalizer(cr, "test.secondary-scheduler.io/hold") })
	s.g.Expect(adminClient.Delete(s.ctx, cr)).To(Succeed())
	s.g.Eventually(read).Should(Equal("Terminating"))
	s.update(cr, func() { controllerutil.RemoveFinalizer(cr, "test.secondary-scheduler.io/hold") })
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(cr)) }).Should(BeTrue())
}

// The operator's pod and the schedulers' pods are admitted in a namespace that enforces
// the restricted Pod Security Standard, which OpenShift and hardened clusters apply.
func TestRestrictedPodSecurityAdmitsOperatorAndSchedulers(t *testing.T) {
	s := newScenario(t)
	restricted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restricted-", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	s.g.Expect(adminClient.Create(s.ctx, restricted)).To(Succeed())
	t.Cleanup(func() { _ = adminClient.Delete(s.ctx, restricted) })

	cr := binPacking("hardened")
	s.create(cr)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).ShouldNot(BeNil())
	schedulerTemplate := s.deployment(cr).Spec.Template
	operatorTemplate := operatorPodTemplate(t)

	for _, template := range []corev1.PodTemplateSpec{schedulerTemplate, operatorTemplate} {
		// The ServiceAccount admission plugin wants the pod's ServiceAccount to exist.
		account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: restricted.Name, Name: template.Spec.ServiceAccountName}}
		s.g.Expect(adminClient.Create(s.ctx, account)).To(Succeed())
	}
	admit := func(name string, template corev1.PodTemplateSpec) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: restricted.Name, Name: name, Labels: template.Labels, Annotations: template.Annotations},
			Spec:       *template.Spec.DeepCopy(),
		}
		return adminClient.Create(s.ctx, pod, client.DryRunAll)
	}
	s.g.Expect(admit("scheduler", schedulerTemplate)).To(Succeed(), "the rendered scheduler pod")
	s.g.Expect(admit("operator", operatorTemplate)).To(Succeed(), "the operator's pod of config/manager")

	// The check bites: without runAsNonRoot either pod is refused.
	for name, template := range map[string]corev1.PodTemplateSpec{"scheduler": schedulerTemplate, "operator": operatorTemplate} {
		weakened := *template.DeepCopy()
		s.g.Expect(weakened.Spec.SecurityContext).NotTo(BeNil())
		weakened.Spec.SecurityContext.RunAsNonRoot = nil
		for i := range weakened.Spec.Containers {
			if weakened.Spec.Containers[i].SecurityContext != nil {
				weakened.Spec.Containers[i].SecurityContext.RunAsNonRoot = nil
			}
		}
		err := admit(name, weakened)
		s.g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s without runAsNonRoot: %v", name, err)
		s.g.Expect(err).To(MatchError(And(ContainSubstring(`violates PodSecurity "restricted:latest"`), ContainSubstring("runAsNonRoot"))))
	}
}

// operatorPodTemplate is the pod template of the operator's Deployment in
// config/manager/manager.yaml, whose Namespace enforces the restricted standard too.
func operatorPodTemplate(t *testing.T) corev1.PodTemplateSpec {
	t.Helper()
	documents, err := manifests.Documents(filepath.Join("..", "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var deployments []appsv1.Deployment
	var namespaces []corev1.Namespace
	for _, document := range documents {
		var kind metav1.TypeMeta
		if err := yaml.Unmarshal(document, &kind); err != nil {
			t.Fatal(err)
		}
		switch kind.Kind {
		case "Deployment":
			var deployment appsv1.Deployment
			if err := yaml.UnmarshalStrict(document, &deployment); err != nil {
				t.Fatal(err)
			}
			deployments = append(deployments, deployment)
		case "Namespace":
			var namespace corev1.Namespace
			if err := yaml.UnmarshalStrict(document, &namespace); err != nil {
				t.Fatal(err)
			}
			namespaces = append(namespaces, namespace)
		}
	}
	g := NewWithT(t)
	g.Expect(deployments).To(HaveLen(1), "manager.yaml has the operator's Deployment")
	g.Expect(namespaces).To(HaveLen(1), "manager.yaml has the operator's Namespace")
	g.Expect(namespaces[0].Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	return deployments[0].Spec.Template
}
