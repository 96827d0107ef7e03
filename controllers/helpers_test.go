package controllers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

const (
	eventuallyTimeout = 30 * time.Second
	pollInterval      = 100 * time.Millisecond
)

// scenario is one test's view of the API server: its own namespace and helpers.
type scenario struct {
	t         *testing.T
	g         gomega.Gomega
	ctx       context.Context
	namespace string
}

func newScenario(t *testing.T) *scenario {
	t.Helper()
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(eventuallyTimeout)
	g.SetDefaultEventuallyPollingInterval(pollInterval)
	g.SetDefaultConsistentlyDuration(2 * time.Second)
	g.SetDefaultConsistentlyPollingInterval(pollInterval)
	name, err := takeSchedulerNamespace()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	t.Cleanup(func() {
		if t.Failed() {
			// What the operator said about this test's objects explains most failures.
			for line := range strings.Lines(operatorLog.String()) {
				if strings.Contains(line, ns.Name) && !strings.Contains(line, "Body") {
					t.Log(strings.TrimSpace(line))
				}
			}
		}
		// The scenario's schedulers go with it: all scenarios share one operator, whose
		// workers would otherwise reconcile a finished scenario's schedulers for the rest
		// of the run (probed each second), and so delay the live scenarios' reconciles.
		if err := adminClient.DeleteAllOf(context.Background(), &v1.SecondaryScheduler{}, client.InNamespace(ns.Name)); err != nil {
			t.Errorf("delete the scenario's SecondarySchedulers: %v", err)
		}
	})
	return &scenario{t: t, g: g, ctx: context.Background(), namespace: ns.Name}
}

func (s *scenario) create(objects ...client.Object) {
	s.t.Helper()
	for _, object := range objects {
		if object.GetNamespace() == "" && !isClusterScoped(object) {
			object.SetNamespace(s.namespace)
		}
		s.g.Expect(adminClient.Create(s.ctx, object)).To(gomega.Succeed(), "create %T %s", object, object.GetName())
	}
}

// createRunning creates cr and plays its Deployment's controller until the scheduler is
// Available: what most tests start from.
func (s *scenario) createRunning(cr *v1.SecondaryScheduler) {
	s.t.Helper()
	s.create(cr)
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
}

func isClusterScoped(object client.Object) bool {
	switch object.(type) {
	case *corev1.Namespace, *corev1.Node, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *apiextensionsv1.CustomResourceDefinition,
		*schedulingv1.PriorityClass, *v1.RoutingTable, *admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		return true
	}
	return false
}

// update re-reads object, applies mutate and writes it, retrying on conflicts.
func (s *scenario) update(object client.Object, mutate func()) {
	s.t.Helper()
	s.g.Eventually(func() error {
		if err := adminClient.Get(s.ctx, client.ObjectKeyFromObject(object), object); err != nil {
			return err
		}
		mutate()
		return adminClient.Update(s.ctx, object)
	}).Should(gomega.Succeed())
}

func (s *scenario) get(object client.Object) error {
	return adminClient.Get(s.ctx, client.ObjectKeyFromObject(object), object)
}

func binPacking(name string) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile}},
	}
}

// targetLoadPacking is a TargetLoadPacking scheduler reading the Prometheus at address.
func targetLoadPacking(name, address string) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: address}}},
	}
}

func custom(name, configMap string) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.SecondarySchedulerSpec{SchedulerConfig: configMap},
	}
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

func configMapIn(namespace, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// goodConfig is a valid custom configuration for scheduler schedulerName.
func goodConfig(schedulerName string, imageLocalityWeight int) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: %s
  plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: %d
`, schedulerName, imageLocalityWeight)
}

// deployment returns cr's Deployment as it is now, or nil.
func (s *scenario) deployment(cr *v1.SecondaryScheduler) *appsv1.Deployment {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: render.WorkloadName(cr)}}
	if err := s.get(deployment); err != nil {
		s.g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "get Deployment: %v", err)
		return nil
	}
	return deployment
}

func (s *scenario) renderedConfig(cr *v1.SecondaryScheduler) string {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: render.ConfigObjectName(cr)}}
	if err := s.get(cm); err == nil {
		return cm.Data["config.yaml"]
	}
	// A configuration holding a token is in a Secret.
	secret := &corev1.Secret{ObjectMeta: cm.ObjectMeta}
	if err := s.get(secret); err != nil {
		return ""
	}
	return string(secret.Data["config.yaml"])
}

// condition returns cr's current condition of a type, or nil.
func (s *scenario) condition(cr *v1.SecondaryScheduler, conditionType v1.ConditionType) *metav1.Condition {
	current := &v1.SecondaryScheduler{}
	if err := adminClient.Get(s.ctx, client.ObjectKeyFromObject(cr), current); err != nil {
		return nil
	}
	condition := meta.FindStatusCondition(current.Status.Conditions, string(conditionType))
	if condition != nil && condition.ObservedGeneration != current.Generation {
		return nil // not yet about the current spec
	}
	return condition
}

// expectCondition waits until cr's condition has the status and reason.
func (s *scenario) expectCondition(cr *v1.SecondaryScheduler, conditionType v1.ConditionType, status metav1.ConditionStatus, reason v1.ConditionReason) *metav1.Condition {
	s.t.Helper()
	return s.expectConditionWithin(cr, conditionType, status, reason, eventuallyTimeout)
}

// expectConditionWithin is expectCondition with a wait of its own.
func (s *scenario) expectConditionWithin(cr *v1.SecondaryScheduler, conditionType v1.ConditionType, status metav1.ConditionStatus,
	reason v1.ConditionReason, timeout time.Duration) *metav1.Condition {
	s.t.Helper()
	var found *metav1.Condition
	s.g.Eventually(func() string {
		found = s.condition(cr, conditionType)
		if found == nil {
			return "none"
		}
		return string(found.Status) + "/" + found.Reason
	}, timeout).Should(gomega.Equal(string(status)+"/"+string(reason)), "condition %s of %s/%s", conditionType, cr.Namespace, cr.Name)
	return found
}

// markDeploymentReady plays the Deployment controller, the kubelet and the scheduler,
// which envtest does not run: the scheduler's pods are replaced by a ready one running the
// current template, the Deployment's status says so, and that pod leads.
func (s *scenario) markDeploymentReady(cr *v1.SecondaryScheduler) {
	s.t.Helper()
	s.markPodsReady(cr, 1)
	s.holdLease(cr)
}

// markPodsReady replaces the scheduler's pods by ready ones running the current template,
// as many as ready, and says so in the Deployment's status; none takes the Lease.
func (s *scenario) markPodsReady(cr *v1.SecondaryScheduler, ready int32) {
	s.t.Helper()
	s.g.Expect(adminClient.DeleteAllOf(s.ctx, &corev1.Pod{}, client.InNamespace(cr.Namespace),
		client.MatchingLabels(render.PodSelector(cr)), client.GracePeriodSeconds(0))).To(gomega.Succeed())
	var template *corev1.PodTemplateSpec
	s.g.Eventually(func() error {
		deployment := s.deployment(cr)
		if deployment == nil {
			return fmt.Errorf("no deployment yet")
		}
		template = deployment.Spec.Template.DeepCopy()
		return nil
	}).Should(gomega.Succeed())
	for i := range ready {
		s.addReadyPod(cr, fmt.Sprintf("%s-%d", render.WorkloadName(cr), i), template)
	}
	s.g.Eventually(func() error {
		deployment := s.deployment(cr)
		if deployment == nil {
			return fmt.Errorf("no deployment yet")
		}
		replicas := *deployment.Spec.Replicas
		deployment.Status = appsv1.DeploymentStatus{
			ObservedGeneration: deployment.Generation,
			Replicas:           replicas,
			UpdatedReplicas:    replicas,
			ReadyReplicas:      ready,
			AvailableReplicas:  ready,
		}
		return adminClient.Status().Update(s.ctx, deployment)
	}).Should(gomega.Succeed())
}

// addReadyPod creates a ready scheduler pod of template, as the kubelet reports one.
func (s *scenario) addReadyPod(cr *v1.SecondaryScheduler, name string, template *corev1.PodTemplateSpec) {
	s.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: name, Labels: template.Labels, Annotations: template.Annotations},
		Spec:       template.Spec,
	}
	s.g.Expect(adminClient.Create(s.ctx, pod)).To(gomega.Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	s.g.Expect(adminClient.Status().Update(s.ctx, pod)).To(gomega.Succeed())
}

// holdLease plays the scheduler replica in pod <scheduler>-0 taking cr's Lease (for an
// hour, so that no test outlives it).
func (s *scenario) holdLease(cr *v1.SecondaryScheduler) {
	s.t.Helper()
	s.holdLeaseAs(cr, render.WorkloadName(cr)+"-0_1234")
}

// holdLeaseAs makes holder, a kube-scheduler identity (its pod's name, "_", a unique
// suffix), take cr's Lease.
func (s *scenario) holdLeaseAs(cr *v1.SecondaryScheduler, holder string) {
	s.t.Helper()
	s.g.Eventually(func() error {
		lease := &coordinationv1.Lease{}
		if err := adminClient.Get(s.ctx, client.ObjectKey{Namespace: cr.Namespace, Name: render.LeaseName(cr)}, lease); err != nil {
			return err
		}
		lease.Spec.HolderIdentity = ptr.To(holder)
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(3600))
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		return adminClient.Update(s.ctx, lease)
	}).Should(gomega.Succeed())
}

// clusterScopedChildren lists the objects outside cr's namespace that belong to it.
func (s *scenario) clusterScopedChildren(cr *v1.SecondaryScheduler) []string {
	crbs := &rbacv1.ClusterRoleBindingList{}
	s.g.Expect(adminClient.List(s.ctx, crbs, ownership.NameSelector(cr))).To(gomega.Succeed())
	rbs := &rbacv1.RoleBindingList{}
	s.g.Expect(adminClient.List(s.ctx, rbs, client.InNamespace(render.AuthenticationReaderNamespace), ownership.NameSelector(cr))).To(gomega.Succeed())
	names := make([]string, 0, len(crbs.Items)+len(rbs.Items))
	for _, crb := range crbs.Items {
		names = append(names, "ClusterRoleBinding/"+crb.Name)
	}
	for _, rb := range rbs.Items {
		names = append(names, "RoleBinding/"+rb.Namespace+"/"+rb.Name)
	}
	return names
}

// namespacedChildren lists the objects in cr's namespace that carry its labels.
func (s *scenario) namespacedChildren(cr *v1.SecondaryScheduler) []client.Object {
	var objects []client.Object
	for _, kind := range allChildKinds {
		if kind.name == clusterRoleBindingKind.name {
			continue
		}
		list := kind.list()
		s.g.Expect(adminClient.List(s.ctx, list, client.InNamespace(cr.Namespace), ownership.NameSelector(cr))).To(gomega.Succeed())
		s.g.Expect(meta.EachListItem(list, func(item runtime.Object) error {
			objects = append(objects, item.(client.Object))
			return nil
		})).To(gomega.Succeed())
	}
	return objects
}

// eventReasons lists the reasons of the Events about cr.
func (s *scenario) eventReasons(cr *v1.SecondaryScheduler) []string {
	events := s.eventsAbout(cr)
	reasons := make([]string, 0, len(events))
	for _, event := range events {
		reasons = append(reasons, event.Reason)
	}
	return reasons
}

// eventsAbout lists the Events about object.
func (s *scenario) eventsAbout(object client.Object) []eventsv1.Event {
	list, err := adminClientset.EventsV1().Events(object.GetNamespace()).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var found []eventsv1.Event
	for _, event := range list.Items {
		if event.Regarding.UID == object.GetUID() {
			found = append(found, event)
		}
	}
	return found
}

func readAll(r io.Reader) string {
	data, _ := io.ReadAll(r)
	return string(data)
}

// ownNodePool creates a node that only this scenario's schedulers place pods on (each of
// crs gets a node pool selecting it alone) and returns its name, for serveLoad. Nodes are
// shared by every test, and a load-aware scheduler without a pool needs series for all of
// them: the nodes other tests create and delete meanwhile would move its status, and a
// test that counts its requests would count theirs.
func (s *scenario) ownNodePool(crs ...*v1.SecondaryScheduler) string {
	s.t.Helper()
	pool := map[string]string{"test.secondary-scheduler.io/pool": s.namespace}
	node := s.createLabelledNode(s.namespace+"-pool", pool)
	for _, cr := range crs {
		cr.Spec.NodePool = &metav1.LabelSelector{MatchLabels: pool}
	}
	return node.Name
}

// serveLoad makes prometheus serve the series load-watcher reads for the node, labelled
// with its name as they should be, 40% loaded; it ends a FreezeSeries.
func serveLoad(prometheus *promtest.Server, node string) {
	for _, series := range metricsprobe.Series {
		prometheus.SetSeries(series, map[string]float64{node: 0.4})
	}
}

// awaitScraped waits until prometheus holds the series load-watcher reads for node.
func (s *scenario) awaitScraped(prometheus *promtest.Server, node string) {
	s.t.Helper()
	for _, series := range metricsprobe.Series {
		s.g.Eventually(func() ([]map[string]string, error) {
			return prometheus.Query(fmt.Sprintf("%s{instance=%q}", series, node))
		}).Should(gomega.HaveLen(1), "Prometheus scrapes %s of node %s", series, node)
	}
}

// testCAPEM is a self-signed CA certificate, as PEM, for CA bundle ConfigMaps.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// serveNodeExporter makes prometheus serve what node-exporter would on each of nodes:
// series keyed by the exporter's address, not the node name, with node_uname_info telling
// the node name; each node's CPU is 75% busy and its memory 60% used.
func serveNodeExporter(prometheus *promtest.Server, nodes ...string) {
	started := time.Now()
	prometheus.SetCollector("node-exporter", func() string {
		var lines strings.Builder
		idleSeconds := time.Since(started).Seconds() * 0.25
		for i, node := range nodes {
			instance := fmt.Sprintf("10.0.0.%d:9100", i+1)
			fmt.Fprintf(&lines, "node_uname_info{instance=%q,nodename=%q} 1\n", instance, node)
			fmt.Fprintf(&lines, "node_cpu_seconds_total{instance=%q,cpu=\"0\",mode=\"idle\"} %g\n", instance, idleSeconds)
			fmt.Fprintf(&lines, "node_memory_MemAvailable_bytes{instance=%q} 4e+09\n", instance)
			fmt.Fprintf(&lines, "node_memory_MemTotal_bytes{instance=%q} 1e+10\n", instance)
		}
		return lines.String()
	})
}

// expectTokenHidden checks that token is in no ConfigMap (but the users' own that
// userConfigMaps name, as namespace/name), Deployment, status of any SecondaryScheduler
// or Event of the cluster, and not in the operator's log.
func (s *scenario) expectTokenHidden(token string, userConfigMaps ...string) {
	s.t.Helper()
	hidden := func(what string, object any) {
		text, err := json.Marshal(object)
		s.g.Expect(err).NotTo(gomega.HaveOccurred())
		s.g.Expect(string(text)).NotTo(gomega.ContainSubstring(token), "%s holds the token", what)
	}
	configMaps := &corev1.ConfigMapList{}
	s.g.Expect(adminClient.List(s.ctx, configMaps)).To(gomega.Succeed())
	for _, configMap := range configMaps.Items {
		if !slices.Contains(userConfigMaps, configMap.Namespace+"/"+configMap.Name) {
			hidden("ConfigMap "+configMap.Namespace+"/"+configMap.Name, configMap)
		}
	}
	deployments := &appsv1.DeploymentList{}
	s.g.Expect(adminClient.List(s.ctx, deployments)).To(gomega.Succeed())
	for _, deployment := range deployments.Items {
		hidden("Deployment "+deployment.Namespace+"/"+deployment.Name, deployment)
	}
	schedulers := &v1.SecondarySchedulerList{}
	s.g.Expect(adminClient.List(s.ctx, schedulers)).To(gomega.Succeed())
	for _, scheduler := range schedulers.Items {
		hidden("the status of "+scheduler.Namespace+"/"+scheduler.Name, scheduler.Status)
	}
	events, err := adminClientset.EventsV1().Events("").List(s.ctx, metav1.ListOptions{})
	s.g.Expect(err).NotTo(gomega.HaveOccurred())
	for _, event := range events.Items {
		hidden("Event "+event.Namespace+"/"+event.Name, event)
	}
	log := operatorLog.String()
	s.g.Expect(log).To(gomega.ContainSubstring(s.namespace), "the operator's log is captured at every level")
	s.g.Expect(log).NotTo(gomega.ContainSubstring(token), "the operator's log holds the token")
}

// createNode registers a Ready, schedulable node with room for pods, deleted when the test ends.
func (s *scenario) createNode(name string) *corev1.Node {
	s.t.Helper()
	return s.createLabelledNode(name, nil)
}

// createLabelledNode is createNode with more labels. Nodes are shared by every test:
// a test that counts them selects its own by a label of its own.
func (s *scenario) createLabelledNode(name string, extraLabels map[string]string) *corev1.Node {
	s.t.Helper()
	nodeLabels := map[string]string{corev1.LabelHostname: name}
	maps.Copy(nodeLabels, extraLabels)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels}}
	s.create(node)
	s.t.Cleanup(func() { _ = adminClient.Delete(s.ctx, node) })
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	node.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
	}
	s.g.Expect(adminClient.Status().Update(s.ctx, node)).To(gomega.Succeed())
	// The TaintNodesByCondition admission plugin taints every new node not-ready; a
	// kubelet's node controller would lift it once ready.
	s.update(node, func() { node.Spec.Taints = nil })
	return node
}

// markDeploymentRolledOut says in deployment's status, as its controller would, that its
// current template runs on replicas pods, ready of them ready.
func (s *scenario) markDeploymentRolledOut(deployment *appsv1.Deployment, replicas, ready int32) {
	s.t.Helper()
	s.g.Eventually(func() error {
		if err := s.get(deployment); err != nil {
			return err
		}
		deployment.Status = appsv1.DeploymentStatus{ObservedGeneration: deployment.Generation, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: ready, AvailableReplicas: ready}
		return adminClient.Status().Update(s.ctx, deployment)
	}).Should(gomega.Succeed())
}
