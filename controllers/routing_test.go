package controllers

import (
	"fmt"
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

// workloadNamespace creates a namespace where workloads run (schedulers run in the
// scenario's), with labels.
func (s *scenario) workloadNamespace(suffix string, labels map[string]string) string {
	s.t.Helper()
	name := s.namespace + "-" + suffix
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	return name
}

// newPod creates a pod in namespace, as a workload's controller would, unchanged by the
// test after, and returns it as the API server stored it (admission included).
func (s *scenario) newPod(namespace string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	s.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "workload-", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	for _, m := range mutate {
		m(pod)
	}
	s.g.Expect(adminClient.Create(s.ctx, pod)).To(Succeed())
	return pod
}

// expectRoutedTo waits until the API server gives new pods of namespace scheduler's
// name: the routing policy takes effect in the API server a moment after the object is
// written, so fresh pods are created until one shows it. Each pod created before the last
// is deleted.
func (s *scenario) expectRoutedTo(namespace, scheduler string) {
	s.t.Helper()
	var last *corev1.Pod
	s.g.Eventually(func() string {
		if last != nil {
			s.g.Expect(client.IgnoreNotFound(adminClient.Delete(s.ctx, last))).To(Succeed())
		}
		last = s.newPod(namespace)
		return last.Spec.SchedulerName
	}).Should(Equal(scheduler), "new pods of %s go to %s", namespace, scheduler)
}

// carried reports whether the routing table in the API server carries cr's route.
func (s *scenario) carried(cr *v1.SecondaryScheduler) bool {
	s.t.Helper()
	tableRoutes, err := ReadTableRoutes(s.ctx, adminClient)
	routes := tableRoutes.Carried
	s.g.Expect(err).NotTo(HaveOccurred())
	_, found := routes[client.ObjectKeyFromObject(cr)]
	return found
}

func routeTo(cr *v1.SecondaryScheduler, route *v1.Routing) *v1.SecondaryScheduler {
	cr.Spec.Routing = route
	return cr
}

// A route sends the new pods it selects to the scheduler, through the API server alone:
// their scheduler name, the route's tolerations and a label; pods of other namespaces,
// naming another scheduler, owned by a DaemonSet or opted out are left alone. A
// scheduler unavailable past failoverAfter gets no new pod until it is back, with an
// Event each way; removing spec.routing removes the route from the routing table.
func TestRoutingSendsSelectedPodsAndFailsOver(t *testing.T) {
	s := newScenario(t)
	team := s.namespace + "-team"
	selected := s.workloadNamespace("selected", map[string]string{"team": team})
	other := s.workloadNamespace("other", nil)
	optedOut := s.workloadNamespace("opted-out", map[string]string{"team": team, v1.LabelRoutingOptOut: "true"})
	cr := routeTo(binPacking("router"), &v1.Routing{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
		Tolerations:       []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "packed", Effect: corev1.TaintEffectNoSchedule}},
		FailoverAfter:     &metav1.Duration{Duration: 10 * time.Second},
	})
	s.createRunning(cr)
	routedCondition := s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.g.Expect(routedCondition.Message).To(ContainSubstring("team=" + team))
	name := cr.Name // the scheduler name's default

	// Routed means in effect: a pod created the moment the condition says so is routed.
	pod := s.newPod(selected)
	s.g.Expect(pod.Spec.SchedulerName).To(Equal(name), "a pod created as soon as Routing is True")
	s.g.Expect(pod.Labels).To(HaveKeyWithValue(v1.LabelRoutedTo, name))
	s.g.Expect(pod.Labels).To(HaveKeyWithValue("app", "web"), "the pod's own labels are kept")
	s.g.Expect(pod.Spec.Tolerations).To(ContainElement(corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "packed",
		Effect: corev1.TaintEffectNoSchedule}))
	withTolerations := s.newPod(selected, func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	})
	s.g.Expect(withTolerations.Spec.Tolerations).To(ContainElements(
		corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists},
		corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "packed", Effect: corev1.TaintEffectNoSchedule}),
		"the route's tolerations are added to the pod's own")

	// Left alone: the policy is in effect (a pod was just routed), so these say no.
	s.g.Expect(s.newPod(other).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a namespace the route does not select")
	s.g.Expect(s.newPod(optedOut).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "an opted-out namespace")
	s.g.Expect(s.newPod(selected, func(p *corev1.Pod) { p.Labels[v1.LabelRoutingOptOut] = "true" }).Spec.SchedulerName).
		To(Equal(corev1.DefaultSchedulerName), "an opted-out pod")
	volcano := s.newPod(selected, func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" })
	s.g.Expect(volcano.Spec.SchedulerName).To(Equal("volcano"), "a pod naming another scheduler")
	s.g.Expect(volcano.Labels).NotTo(HaveKey(v1.LabelRoutedTo))
	daemonSetPod := s.newPod(selected, func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: types.UID("8e1c"), Controller: ptr.To(true)}}
	})
	s.g.Expect(daemonSetPod.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a DaemonSet pod, by default")
	bound := s.newPod(selected, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" })
	s.g.Expect(bound.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a pod with a node already")
	s.g.Expect(s.newPod(s.namespace).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a namespace where schedulers run")

	// An edit whose pod no node takes, while the earlier pod still schedules: the
	// scheduler serves its name, so the route stays, past failoverAfter too.
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	s.g.Eventually(func() []string { return s.deployment(cr).Spec.Template.Spec.Containers[0].Command }).Should(ContainElement("--v=4"))
	s.addPod(cr, "router-scheduler-stuck", s.deployment(cr).Spec.Template.DeepCopy(), corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}})
	s.reportRollout(cr, 1)
	s.expectConditionWithin(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonSchedulerUnschedulable, 12*time.Second)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonServingPreviousConfiguration)
	// Routed throughout: the edit leaves spec.routing alone, so the route in effect is the
	// route wanted.
	s.g.Consistently(func() string {
		routing := s.condition(cr, v1.ConditionRouting)
		return string(routing.Status) + "/" + routing.Reason
	}, 12*time.Second, time.Second).Should(Equal("True/"+string(v1.ReasonRouted)), "no failover while the earlier pod serves (failoverAfter is 10 s)")
	s.g.Expect(s.newPod(selected).Spec.SchedulerName).To(Equal(name))

	// The scheduler stops: within failoverAfter pods are still routed, past it they are not.
	s.markPodsReady(cr, 0)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoReadyScheduler)
	failedOver := s.expectConditionWithin(cr, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonFailedOver, time.Minute)
	s.g.Expect(failedOver.Message).To(ContainSubstring("default scheduler"))
	s.expectRoutedTo(selected, corev1.DefaultSchedulerName)
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(v1.ReasonFailedOver)))

	// Back: routed again, in effect once the condition says so.
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.g.Expect(s.newPod(selected).Spec.SchedulerName).To(Equal(name), "a pod created as soon as Routing is True again")
	s.g.Eventually(func() int {
		routedEvents := 0
		for _, reason := range s.eventReasons(cr) {
			if reason == string(v1.ReasonRouted) {
				routedEvents++
			}
		}
		return routedEvents
	}).Should(BeNumerically(">=", 1), "an Event when routing resumes")

	// Without spec.routing: no condition, and no route in the table.
	s.update(cr, func() { cr.Spec.Routing = nil })
	s.g.Eventually(func() *metav1.Condition { return s.condition(cr, v1.ConditionRouting) }).Should(BeNil())
	s.expectRoutedTo(selected, corev1.DefaultSchedulerName)
}

// A route in mode Audit only labels the pods it would route; of two routes that may
// select the same pods, the newer is refused with the older's name, and is carried once
// the older one goes.
func TestRoutingAuditsAndRefusesConflicts(t *testing.T) {
	s := newScenario(t)
	team := s.namespace + "-team"
	selected := s.workloadNamespace("audited", map[string]string{"team": team})
	selector := metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}
	auditor := routeTo(binPacking("auditor"), &v1.Routing{Mode: v1.RoutingAudit, NamespaceSelector: selector})
	s.createRunning(auditor)
	s.expectCondition(auditor, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonAuditing)
	var pod *corev1.Pod
	s.g.Eventually(func() map[string]string {
		pod = s.newPod(selected)
		return pod.Labels
	}).Should(HaveKeyWithValue(v1.LabelWouldRouteTo, auditor.Name))
	s.g.Expect(pod.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "audit changes no pod's scheduler")
	s.g.Expect(pod.Labels).NotTo(HaveKey(v1.LabelRoutedTo))
	labelled := &corev1.PodList{}
	s.g.Expect(adminClient.List(s.ctx, labelled, client.MatchingLabels{v1.LabelWouldRouteTo: auditor.Name})).To(Succeed())
	s.g.Eventually(func() *int32 {
		if s.get(auditor) != nil || auditor.Status.Routing == nil {
			return nil
		}
		return auditor.Status.Routing.AuditedPods
	}).Should(Equal(ptr.To(int32(len(labelled.Items)))), "status counts the pods audit labelled")
	s.g.Expect(s.condition(auditor, v1.ConditionRouting).Message).To(ContainSubstring(fmt.Sprintf("%d pod", len(labelled.Items))))

	rival := routeTo(binPacking("rival"), &v1.Routing{NamespaceSelector: selector})
	s.createRunning(rival)
	conflict := s.expectCondition(rival, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonRoutingConflict)
	s.g.Expect(conflict.Message).To(ContainSubstring(fmt.Sprintf("SecondaryScheduler %s/auditor", s.namespace)))
	s.g.Expect(s.newPod(selected).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "the refused route routes nothing")

	s.g.Expect(adminClient.Delete(s.ctx, auditor)).To(Succeed())
	s.expectCondition(rival, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.expectRoutedTo(selected, rival.Name)

	// The table the operator writes is its own, by label, carries what it says, and names
	// the namespaces never routed.
	table := &v1.RoutingTable{}
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKey{Name: v1.RoutingTableName}, table)).To(Succeed())
	s.g.Expect(table.Labels).To(HaveKeyWithValue(render.LabelManagedBy, render.ManagedByValue))
	s.g.Expect(table.Spec.Routes).To(ContainElement(And(HaveField("SecondaryScheduler", s.namespace+"/rival"), HaveField("SchedulerName", rival.Name),
		HaveField("Mode", v1.RoutingEnforce))))
	s.g.Expect(table.Spec.Routes).NotTo(ContainElement(HaveField("SecondaryScheduler", s.namespace+"/auditor")))
	s.g.Expect(table.Spec.NeverRoutedNamespaces).To(ContainElements(operatorNamespace, s.namespace))
}

// A route routes nothing to a scheduler that has not run, not even within failoverAfter:
// a resource refused before its scheduler ever ran (a ConfigMap that does not exist)
// leaves new pods to the default scheduler, and routes them once its scheduler is
// Available. The routing table is owned by the SecondaryScheduler CRD, so that
// uninstalling the API deletes it; a table that lost its owner gets it back.
func TestRoutingWaitsForASchedulerThatRan(t *testing.T) {
	s := newScenario(t)
	team := s.namespace + "-team"
	selected := s.workloadNamespace("selected", map[string]string{"team": team})
	cr := routeTo(custom("waiter", "waiter-config"), &v1.Routing{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
		FailoverAfter:     &metav1.Duration{Duration: time.Hour},
	})
	s.create(cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonConfigMapNotFound)
	notAvailable := s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonSchedulerNotAvailable)
	s.g.Expect(notAvailable.Message).To(ContainSubstring("default scheduler"))
	s.g.Consistently(func() bool { return s.carried(cr) }).Should(BeFalse(), "the routing table carries no route to a scheduler that never ran")
	s.g.Expect(s.newPod(selected).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))

	s.create(configMap("waiter-config", map[string]string{"config.yaml": goodConfig(cr.Name, 1)}))
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.expectRoutedTo(selected, cr.Name)

	crd := &apiextensionsv1.CustomResourceDefinition{}
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKey{Name: render.SecondarySchedulerCRDName}, crd)).To(Succeed())
	owner := render.InstallationOwner(crd.UID)
	table := &v1.RoutingTable{ObjectMeta: metav1.ObjectMeta{Name: v1.RoutingTableName}}
	s.g.Eventually(func() []metav1.OwnerReference {
		s.g.Expect(s.get(table)).To(Succeed())
		return table.OwnerReferences
	}).Should(ContainElement(owner), "the routing table is owned by the CRD")
	s.update(table, func() { table.OwnerReferences = nil })
	s.g.Eventually(func() []metav1.OwnerReference {
		s.g.Expect(s.get(table)).To(Succeed())
		return table.OwnerReferences
	}).Should(ContainElement(owner), "the routing table without its owner gets it back")
}

// The routing policy the installer ships selects pods as Kubernetes' label selectors do,
// whatever selectors the table holds: matchLabels, In, NotIn, Exists and DoesNotExist,
// for pods and for namespaces, with real pods created through the API server. The test
// binds the policy a second time, to a table of its own and to its own namespaces alone,
// so that the operator's table is left as it is.
func TestRoutingPolicySelectsAsLabelSelectorsDo(t *testing.T) {
	s := newScenario(t)
	suite := s.namespace + "-semantics"
	requirement := func(key string, operator metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: operator, Values: values}
	}
	type pod struct {
		labels map[string]string
		routed bool
	}
	podSelectors := []struct {
		name     string
		selector *metav1.LabelSelector
		pods     []pod
	}{
		{"none: every pod", nil, []pod{{nil, true}, {map[string]string{"tier": "gold"}, true}}},
		{"matchLabels", &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold", "team": "a"}}, []pod{
			{map[string]string{"tier": "gold", "team": "a"}, true}, {map[string]string{"tier": "gold", "team": "a", "app": "x"}, true},
			{map[string]string{"tier": "gold"}, false}, {map[string]string{"tier": "silver", "team": "a"}, false}, {nil, false}}},
		{"In", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{requirement("tier", metav1.LabelSelectorOpIn, "gold", "silver")}}, []pod{
			{map[string]string{"tier": "gold"}, true}, {map[string]string{"tier": "silver"}, true}, {map[string]string{"tier": "bronze"}, false}, {nil, false}}},
		{"NotIn", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{requirement("tier", metav1.LabelSelectorOpNotIn, "bronze")}}, []pod{
			{map[string]string{"tier": "gold"}, true}, {nil, true}, {map[string]string{"tier": "bronze"}, false}}},
		{"Exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{requirement("example.com/batch", metav1.LabelSelectorOpExists)}}, []pod{
			{map[string]string{"example.com/batch": ""}, true}, {map[string]string{"example.com/batch": "yes"}, true}, {map[string]string{"batch": "yes"}, false}}},
		{"DoesNotExist", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{requirement("legacy", metav1.LabelSelectorOpDoesNotExist)}}, []pod{
			{nil, true}, {map[string]string{"legacy": "yes"}, false}}},
		{"matchLabels and every operator", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}, MatchExpressions: []metav1.LabelSelectorRequirement{
			requirement("tier", metav1.LabelSelectorOpIn, "gold"), requirement("zone", metav1.LabelSelectorOpNotIn, "east"),
			requirement("owner", metav1.LabelSelectorOpExists), requirement("legacy", metav1.LabelSelectorOpDoesNotExist)}}, []pod{
			{map[string]string{"team": "a", "tier": "gold", "owner": "x"}, true}, {map[string]string{"team": "a", "tier": "gold", "owner": "x", "zone": "west"}, true},
			{map[string]string{"team": "a", "tier": "gold", "owner": "x", "zone": "east"}, false},
			{map[string]string{"team": "a", "tier": "gold", "owner": "x", "legacy": "1"}, false},
			{map[string]string{"team": "a", "tier": "gold"}, false}, {map[string]string{"team": "b", "tier": "gold", "owner": "x"}, false}}},
	}
	// One route for each pod selector, each selecting a namespace of its own; and a route
	// whose namespace selector is under test, selecting namespaces labelled suite=NS-ns.
	routes := make([]routing.Route, 0, len(podSelectors)+1)
	namespaces := make([]string, len(podSelectors))
	for i, selector := range podSelectors {
		name := fmt.Sprint("case-", i)
		namespaces[i] = s.workloadNamespace(name, map[string]string{"suite": suite, "case": name})
		routes = append(routes, routing.Route{Owner: types.NamespacedName{Namespace: s.namespace, Name: name}, SchedulerName: name, Mode: v1.RoutingEnforce,
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"case": name}}, PodSelector: selector.selector})
	}
	routes = append(routes, routing.Route{Owner: types.NamespacedName{Namespace: s.namespace, Name: "namespaces"}, SchedulerName: "namespaces",
		Mode: v1.RoutingEnforce, NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"suite": suite + "-ns"},
			MatchExpressions: []metav1.LabelSelectorRequirement{requirement("tier", metav1.LabelSelectorOpIn, "gold", "silver"),
				requirement("zone", metav1.LabelSelectorOpNotIn, "east"), requirement("team", metav1.LabelSelectorOpExists),
				requirement("legacy", metav1.LabelSelectorOpDoesNotExist)}}})
	table, err := render.RoutingTable(routes, nil, nil)
	s.g.Expect(err).NotTo(HaveOccurred())
	table.Name, table.Labels = suite, nil
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: suite},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: render.RoutingPolicyName,
			ParamRef: &admissionregistrationv1.ParamRef{Name: suite, ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{requirement("suite", metav1.LabelSelectorOpIn, suite, suite+"-ns")}}}}}
	s.create(table, binding)
	t.Cleanup(func() { _ = adminClient.Delete(s.ctx, binding) })
	s.expectRoutedTo(namespaces[0], "case-0")

	for i, selector := range podSelectors {
		for _, p := range selector.pods {
			want := corev1.DefaultSchedulerName
			if p.routed {
				want = fmt.Sprint("case-", i)
			}
			created := s.newPod(namespaces[i], func(pod *corev1.Pod) { pod.Labels = p.labels })
			s.g.Expect(created.Spec.SchedulerName).To(Equal(want), "pod selector %s, pod labels %v", selector.name, p.labels)
		}
	}
	namespaceCases := []struct {
		labels map[string]string
		routed bool
	}{
		{map[string]string{"tier": "gold", "team": "a"}, true},
		{map[string]string{"tier": "silver", "team": "a", "zone": "west"}, true},
		{map[string]string{"tier": "bronze", "team": "a"}, false},
		{map[string]string{"tier": "gold", "team": "a", "legacy": "yes"}, false},
		{map[string]string{"tier": "silver", "team": "a", "zone": "east"}, false},
		{map[string]string{"tier": "gold"}, false},
	}
	for i, c := range namespaceCases {
		labels := map[string]string{"suite": suite + "-ns"}
		maps.Copy(labels, c.labels)
		namespace := s.workloadNamespace(fmt.Sprint("ns-", i), labels)
		want := corev1.DefaultSchedulerName
		if c.routed {
			want = "namespaces"
		}
		s.g.Expect(s.newPod(namespace).Spec.SchedulerName).To(Equal(want), "namespace labels %v", c.labels)
	}
}

// The routing policy is the installer's: when it, or its binding, is missing or differs
// from what the installer ships, each route says so (RoutingPolicyMissing) and pods are
// not routed; the operator writes the routing table all the same, and nothing else, so
// that routing starts when a cluster admin applies the policy.
func TestRoutingReportsAMissingPolicy(t *testing.T) {
	s := newScenario(t)
	team := s.namespace + "-team"
	selected := s.workloadNamespace("selected", map[string]string{"team": team})
	shipped, err := render.RoutingAdmission()
	s.g.Expect(err).NotTo(HaveOccurred())
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.RoutingPolicyName}}
	s.g.Expect(adminClient.Delete(s.ctx, binding)).To(Succeed())
	restore := func() {
		if err := adminClient.Create(s.ctx, shipped[1].DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("restore the routing policy's binding: %v", err)
		}
	}
	t.Cleanup(restore)

	cr := routeTo(binPacking("unbound"), &v1.Routing{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}})
	s.createRunning(cr)
	missing := s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonRoutingPolicyMissing)
	s.g.Expect(missing.Message).To(ContainSubstring("MutatingAdmissionPolicyBinding " + render.RoutingPolicyName + " does not exist"))
	s.g.Expect(missing.Message).To(ContainSubstring("dist/routing.yaml"))
	s.g.Eventually(func() bool { return s.carried(cr) }).Should(BeTrue(), "the routing table carries the route, ready for the policy")
	s.g.Consistently(func() bool { return apierrors.IsNotFound(s.get(binding)) }).Should(BeTrue(), "the operator makes no binding")
	s.g.Expect(s.newPod(selected).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))

	// The admin applies it: routed.
	restore()
	s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.expectRoutedTo(selected, cr.Name)

	// A policy changed by someone is not the installer's: reported, and left as it is.
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: render.RoutingPolicyName}}
	s.update(policy, func() { policy.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy })
	t.Cleanup(func() {
		s.update(policy, func() { policy.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy })
	})
	differs := s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonRoutingPolicyMissing)
	s.g.Expect(differs.Message).To(ContainSubstring("MutatingAdmissionPolicy " + render.RoutingPolicyName + " differs"))
	s.g.Consistently(func() admissionregistrationv1.ReinvocationPolicyType {
		s.g.Expect(s.get(policy)).To(Succeed())
		return policy.Spec.ReinvocationPolicy
	}).Should(Equal(admissionregistrationv1.IfNeededReinvocationPolicy), "the operator leaves the policy alone")
	s.update(policy, func() { policy.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy })
	s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
}

// The operator cannot be borrowed to change pods: under the RBAC it is shipped with, it
// can neither create a mutating admission policy or binding, nor change or delete the
// routing policy; it may write the routing table only.
func TestRoutingOperatorCannotWriteMutatingPolicies(t *testing.T) {
	s := newScenario(t)
	operator, err := client.New(operatorRESTConfig, client.Options{Scheme: testScheme})
	s.g.Expect(err).NotTo(HaveOccurred())
	shipped, err := render.RoutingAdmission()
	s.g.Expect(err).NotTo(HaveOccurred())
	borrowed := shipped[0].DeepCopy()
	borrowed.SetName(s.namespace + "-borrowed")
	s.g.Expect(apierrors.IsForbidden(operator.Create(s.ctx, borrowed))).To(BeTrue(), "create a MutatingAdmissionPolicy")
	borrowedBinding := shipped[1].DeepCopy()
	borrowedBinding.SetName(s.namespace + "-borrowed")
	s.g.Expect(apierrors.IsForbidden(operator.Create(s.ctx, borrowedBinding))).To(BeTrue(), "create a MutatingAdmissionPolicyBinding")

	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	s.g.Expect(operator.Get(s.ctx, client.ObjectKey{Name: render.RoutingPolicyName}, policy)).To(Succeed(), "the operator reads the policy")
	policy.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	s.g.Expect(apierrors.IsForbidden(operator.Update(s.ctx, policy))).To(BeTrue(), "update the routing policy")
	s.g.Expect(apierrors.IsForbidden(operator.Delete(s.ctx, policy))).To(BeTrue(), "delete the routing policy")
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.RoutingPolicyName}}
	s.g.Expect(apierrors.IsForbidden(operator.Delete(s.ctx, binding))).To(BeTrue(), "delete the routing policy's binding")
}
