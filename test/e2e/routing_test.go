//go:build e2e

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// routedToleration is the toleration a route adds: that of a node pool's taint.
var routedToleration = corev1.Toleration{Key: "e2e.secondary-scheduler.io/routed-pool", Operator: corev1.TolerationOpExists,
	Effect: corev1.TaintEffectNoSchedule}

// newWorkloadNamespace creates a namespace where workloads run, not schedulers, with labels,
// deleted when the spec ends.
func newWorkloadNamespace(name string, labels map[string]string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return name
}

// podTemplate is a workload's pod template as its team wrote it: no scheduler name, and
// the toleration of the cluster's fake nodes that every workload here has.
func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"type": "kwok"},
			Tolerations:  []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
		},
	}
}

// createDeployment creates a Deployment of replicas pods of app in namespace, and returns
// their names once its ReplicaSet made them all.
func createDeployment(namespace, app string, replicas int32) []string {
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: app},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Template: podTemplate(app)},
	}
	Expect(k8s.Create(ctx, deployment)).To(Succeed())
	return podsOf(namespace, app, int(replicas))
}

// podsOf waits until namespace has count pods of app, and returns their names.
func podsOf(namespace, app string, count int) []string {
	var names []string
	Eventually(func() []string {
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"app": app})).To(Succeed())
		names = names[:0]
		for _, pod := range pods.Items {
			names = append(names, pod.Name)
		}
		return names
	}).Should(HaveLen(count), "%d pods of %s/%s", count, namespace, app)
	return names
}

func getPod(namespace, name string) *corev1.Pod {
	pod := &corev1.Pod{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod)).To(Succeed())
	return pod
}

// expectRouting waits until the API server routes the new pods of namespace to scheduler
// (routed) or no longer does: the routing policy takes effect in the API server a moment
// after it is written, so probe pods are created, and deleted, until one shows it.
func expectRouting(namespace, scheduler string, routed bool) {
	Eventually(func() bool {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "routing-probe-"},
			Spec: podTemplate("routing-probe").Spec}
		Expect(k8s.Create(ctx, probe)).To(Succeed())
		Expect(k8s.Delete(ctx, probe, client.GracePeriodSeconds(0))).To(Succeed())
		return (probe.Spec.SchedulerName == scheduler) == routed
	}).Should(BeTrue(), "new pods of %s routed to %s: %v", namespace, scheduler, routed)
}

// expectRoutedNow creates one pod in namespace, at once, and expects the API server to
// have given it scheduler's name: for a route reported Routed, which means in effect.
func expectRoutedNow(namespace, scheduler string) {
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "routed-now-"}, Spec: podTemplate("routed-now").Spec}
	Expect(k8s.Create(ctx, probe)).To(Succeed())
	Expect(k8s.Delete(ctx, probe, client.GracePeriodSeconds(0))).To(Succeed())
	Expect(probe.Spec.SchedulerName).To(Equal(scheduler), "a pod of %s created the moment Routing is True", namespace)
}

var _ = Describe("Routing", func() {
	It("sends a Deployment's pods of the selected namespaces to the scheduler, unchanged, and no others; fails over to the default scheduler while it is down", func() {
		ns := newNamespace()
		team := newWorkloadNamespace(ns+"-team", map[string]string{"e2e.secondary-scheduler.io/team": ns})
		elsewhere := newWorkloadNamespace(ns+"-elsewhere", nil)
		cr := binPacking(ns, "router")
		cr.Spec.Routing = &v1.Routing{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"e2e.secondary-scheduler.io/team": ns}},
			Tolerations:       []corev1.Toleration{routedToleration},
			FailoverAfter:     &metav1.Duration{Duration: 10 * time.Second},
		}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)
		output, err := kubectl("wait", "-n", ns, "--for=condition=Routing", "secondaryscheduler/router", "--timeout=60s")
		Expect(err).NotTo(HaveOccurred(), output)
		expectRoutedNow(team, "router")

		// A Deployment whose manifest names no scheduler: placed by the secondary one.
		routed := createDeployment(team, "web", 3)
		expectScheduledBy(team, routed, "router")
		for _, name := range routed {
			pod := getPod(team, name)
			Expect(pod.Spec.SchedulerName).To(Equal("router"))
			Expect(pod.Labels).To(HaveKeyWithValue(v1.LabelRoutedTo, "router"))
			Expect(pod.Spec.Tolerations).To(ContainElement(routedToleration), "the node pool's toleration is added")
		}

		// Left alone: another namespace, a pod naming another scheduler, DaemonSet pods, kube-system.
		for _, name := range createDeployment(elsewhere, "web", 1) {
			Expect(getPod(elsewhere, name).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))
		}
		named := workload(team, "names-another", "someone-elses", "100m", "registry.example/app:1")
		Expect(k8s.Create(ctx, named)).To(Succeed())
		Expect(named.Spec.SchedulerName).To(Equal("someone-elses"))
		agents := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "agent"},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: podTemplate("agent")},
		}
		Expect(k8s.Create(ctx, agents)).To(Succeed())
		Eventually(func() []string {
			pods := &corev1.PodList{}
			Expect(k8s.List(ctx, pods, client.InNamespace(team), client.MatchingLabels{"app": "agent"})).To(Succeed())
			schedulers := make([]string, 0, len(pods.Items))
			for _, pod := range pods.Items {
				schedulers = append(schedulers, pod.Spec.SchedulerName)
			}
			return schedulers
		}).Should(And(Not(BeEmpty()), HaveEach(corev1.DefaultSchedulerName)), "DaemonSet pods keep the default scheduler")
		system := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, GenerateName: "routing-e2e-"}, Spec: podTemplate("system").Spec}
		Expect(k8s.Create(ctx, system)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, system))).To(Succeed()) })
		Expect(system.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "kube-system's pods are never routed")

		// An edit whose pod no node takes, while the earlier pod still schedules: the
		// scheduler serves its name, so the route stays past failoverAfter, and routed
		// pods are placed by the earlier pod.
		serving := schedulerPods(cr)
		editSpec(cr, func(cr *v1.SecondaryScheduler) {
			cr.Spec.NodeSelector = map[string]string{"e2e.secondary-scheduler.io/no-such-node": "true"}
		})
		// No node has the label: the operator says so before the pod is even tried.
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }, "60s").Should(Equal("True/" + string(v1.ReasonNoSchedulableNodes)))
		Expect(condition(cr, v1.ConditionAvailable)).To(Equal("True/" + string(v1.ReasonServingPreviousConfiguration)))
		// Routed throughout: the edit leaves spec.routing alone, so the route in effect is
		// the route wanted.
		Consistently(func() string { return condition(cr, v1.ConditionRouting) }, "15s", "1s").Should(Equal("True/"+string(v1.ReasonRouted)),
			"no failover while the earlier pod serves (failoverAfter is 10 s)")
		expectScheduledBy(team, createDeployment(team, "during-stuck-rollout", 1), "router")
		Expect(schedulerPods(cr)).To(ContainElement(HaveField("UID", serving[0].UID)), "the earlier pod still runs")
		editSpec(cr, func(cr *v1.SecondaryScheduler) { cr.Spec.NodeSelector = nil })
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }, "60s").Should(HavePrefix("False/"))

		// The scheduler is down past failoverAfter: its pod is gone and a quota keeps the
		// Deployment from making another. New pods go to the default scheduler, which places them.
		outage := time.Now()
		quota := refusePods(ns)
		for _, pod := range schedulerPods(cr) {
			Expect(k8s.Delete(ctx, &pod, client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(func() string { return condition(cr, v1.ConditionRouting) }, "90s").Should(Equal("False/" + string(v1.ReasonFailedOver)))
		expectRouting(team, corev1.DefaultSchedulerName, true)
		fallback := createDeployment(team, "during-outage", 2)
		for _, name := range fallback {
			Expect(getPod(team, name).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))
		}
		expectScheduledBy(team, fallback, corev1.DefaultSchedulerName)

		// Back: new pods are routed again.
		Expect(k8s.Delete(ctx, quota)).To(Succeed())
		waitAvailable(cr)
		Eventually(func() string { return condition(cr, v1.ConditionRouting) }).Should(Equal("True/" + string(v1.ReasonRouted)))
		expectRoutedNow(team, "router")
		expectScheduledBy(team, createDeployment(team, "after-outage", 1), "router")
		// The Events follow the status writes they announce, a moment later; the route
		// taken when the scheduler first ran told Routed too, so only those of the outage count.
		Eventually(func() []string { return eventReasonsSince(cr, outage) }).
			Should(ContainElements("Routing "+string(v1.ReasonFailedOver), "Routing "+string(v1.ReasonRouted)), "an Event each way")
	})

	It("audits without changing a pod, and refuses a route that may select the pods of an older one", func() {
		ns := newNamespace()
		selector := metav1.LabelSelector{MatchLabels: map[string]string{"e2e.secondary-scheduler.io/audited": ns}}
		audited := newWorkloadNamespace(ns+"-audited", selector.MatchLabels)
		auditor := binPacking(ns, "auditor")
		auditor.Spec.Routing = &v1.Routing{Mode: v1.RoutingAudit, NamespaceSelector: selector}
		Expect(k8s.Create(ctx, auditor)).To(Succeed())
		waitAvailable(auditor)
		Eventually(func() string { return condition(auditor, v1.ConditionRouting) }).Should(Equal("False/" + string(v1.ReasonAuditing)))
		var pods []string
		Eventually(func() map[string]string {
			app := fmt.Sprintf("audited-%d", len(pods))
			pods = append(pods, createDeployment(audited, app, 1)...)
			return getPod(audited, pods[len(pods)-1]).Labels
		}).Should(HaveKeyWithValue(v1.LabelWouldRouteTo, "auditor"))
		last := getPod(audited, pods[len(pods)-1])
		Expect(last.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "audit changes no pod's scheduler")
		Eventually(func() *int32 {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(auditor), auditor)).To(Succeed())
			if auditor.Status.Routing == nil {
				return nil
			}
			return auditor.Status.Routing.AuditedPods
		}).Should(HaveValue(BeNumerically(">=", 1)), "status counts the pods audit labelled")

		rival := binPacking(ns, "rival")
		rival.Spec.Routing = &v1.Routing{NamespaceSelector: selector}
		Expect(k8s.Create(ctx, rival)).To(Succeed())
		Eventually(func() string { return condition(rival, v1.ConditionRouting) }).Should(Equal("False/" + string(v1.ReasonRoutingConflict)))
		output, err := kubectl("get", "-n", ns, "secondaryscheduler/rival", "-o", "jsonpath={.status.conditions[?(@.type=='Routing')].message}")
		Expect(err).NotTo(HaveOccurred(), output)
		Expect(output).To(ContainSubstring("SecondaryScheduler " + ns + "/auditor"))
	})
})
