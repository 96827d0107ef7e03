package controllers

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// A SecondaryScheduler deleted without its finalizer having run leaves its bindings
// outside its namespace; the operator deletes them, and a new SecondaryScheduler of the
// same name, refused while one of them is still there, runs once it is gone.
func TestOrphanedBindingsAreSwept(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("orphaning")
	s.createRunning(cr)
	s.g.Expect(s.get(cr)).To(Succeed())
	bindings := []string{
		"ClusterRoleBinding/" + render.ClusterBindingName(cr, "kube-scheduler"),
		"ClusterRoleBinding/" + render.ClusterBindingName(cr, "volume-scheduler"),
		"RoleBinding/" + render.AuthenticationReaderNamespace + "/" + render.ClusterBindingName(cr, "authentication-reader"),
	}
	s.g.Expect(s.clusterScopedChildren(cr)).To(ConsistOf(bindings))
	// Something else holds one binding for a while once it is deleted, so that the new
	// SecondaryScheduler below meets it.
	const hold = "test.secondary-scheduler.io/hold"
	held := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "kube-scheduler")}}
	s.update(held, func() { controllerutil.AddFinalizer(held, hold) })
	t.Cleanup(func() {
		s.update(held, func() { controllerutil.RemoveFinalizer(held, hold) })
	})

	s.deleteWithoutFinalizer(cr)
	s.g.Eventually(func() []string { return s.clusterScopedChildren(cr) }).Should(Equal(bindings[:1]))
	s.g.Eventually(func() *metav1.Time { _ = s.get(held); return held.DeletionTimestamp }).ShouldNot(BeNil())
	s.g.Eventually(func() []string { return sweptLogLines(s.namespace, cr.UID) }).Should(HaveLen(3), "each is logged once, with its owner")
	s.collectGarbageOf(cr)

	again := binPacking("orphaning")
	s.create(again)
	taken := s.expectCondition(again, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonObjectNameTaken)
	s.g.Expect(taken.Message).To(ContainSubstring("ClusterRoleBinding " + held.Name + " already exists"))
	s.update(held, func() { controllerutil.RemoveFinalizer(held, hold) })
	s.markDeploymentReady(again)
	s.expectCondition(again, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.g.Expect(s.get(again)).To(Succeed())
	s.g.Eventually(func() []string { return s.clusterScopedChildren(again) }).Should(ConsistOf(bindings))
	crbs := &rbacv1.ClusterRoleBindingList{}
	s.g.Expect(adminClient.List(s.ctx, crbs, ownership.NameSelector(again))).To(Succeed())
	for _, crb := range crbs.Items {
		s.g.Expect(crb.Labels).To(HaveKeyWithValue(render.LabelOwnerUID, string(again.UID)), crb.Name)
	}
}

// The sweep deletes only what is provably a gone SecondaryScheduler's: not the bindings
// of one that exists, and not a binding that carries a gone one's labels but grants what
// the operator never renders for it.
func TestOrphanSweepLeavesWhatIsNotProvablyAnOrphan(t *testing.T) {
	s := newScenario(t)
	kept := binPacking("kept")
	s.createRunning(kept)
	s.g.Expect(s.get(kept)).To(Succeed())
	keptBindings := make([]client.Object, 0, 2)
	for _, name := range []string{render.ClusterBindingName(kept, "kube-scheduler"), render.ClusterBindingName(kept, "volume-scheduler")} {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.g.Expect(s.get(binding)).To(Succeed())
		keptBindings = append(keptBindings, binding)
	}

	// No SecondaryScheduler has this UID: it is gone.
	departed := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "departed", UID: uuid.NewUUID()}}
	alice := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}
	foreign := []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view-for-alice:" + s.namespace, Labels: render.OwnerLabels(departed)},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: alice},
		// A rendered name, granting what render never grants.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(departed, "volume-scheduler"), Labels: render.OwnerLabels(departed)},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:volume-scheduler"}, Subjects: alice},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: render.AuthenticationReaderNamespace,
			Name: render.ClusterBindingName(departed, "authentication-reader"), Labels: render.OwnerLabels(departed)},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}, Subjects: alice},
		// Labelled as the existing one's.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view-for-alice-kept:" + s.namespace, Labels: render.OwnerLabels(kept)},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: alice},
	}
	// And the departed scheduler's binding as render renders it, which goes: the sweep ran.
	orphan := renderedBinding(t, departed, render.ClusterBindingName(departed, "kube-scheduler"))
	s.create(slices.Concat(foreign, []client.Object{orphan})...)
	t.Cleanup(func() {
		for _, object := range append(foreign, orphan) {
			_ = adminClient.Delete(s.ctx, object)
		}
	})

	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(orphan.DeepCopy())) }).Should(BeTrue(), "the departed scheduler's binding is swept")
	s.expectUnchanged(slices.Concat(foreign, keptBindings)...)
	s.g.Eventually(func() []string { return sweptLogLines(s.namespace, departed.UID) }).Should(HaveLen(1))
	s.g.Expect(sweptLogLines(s.namespace, kept.UID)).To(BeEmpty())
}

// The owner the sweep rebuilds from an object's labels (namespace, name, UID) proves every
// object render puts outside a scheduler's namespace its own, as the scheduler itself
// would; and each of them is of a kind the sweep looks for.
func TestOwnerRebuiltFromLabelsProvesWhatRenderPutsElsewhere(t *testing.T) {
	g := NewWithT(t)
	prometheus := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "load-packer", UID: uuid.NewUUID()},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Provider: v1.PrometheusProvider, Address: "https://prometheus.monitoring.svc:9091", InstallRecordingRules: true,
				ServiceAccountToken: &v1.ServiceAccountTokenAuth{ClusterRole: "prometheus-reader"}}},
			Descheduling: &v1.Descheduling{}},
	}
	metricsServer := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "metrics-server", UID: uuid.NewUUID()},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}},
	}
	tests := []struct {
		cr    *v1.SecondaryScheduler
		facts render.Facts
	}{
		{prometheus, render.Facts{KubernetesMinor: 37, PlacementNodes: 1,
			MetricsIdentity: &render.MetricsIdentity{ClusterRole: "prometheus-reader"},
			RecordingRules:  &render.RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{"role": "rules"}}}},
		{metricsServer, render.Facts{KubernetesMinor: 37, PlacementNodes: 1}},
	}
	kinds := map[string]bool{}
	for _, tt := range tests {
		rendered, err := render.Render(tt.cr, tt.facts)
		g.Expect(err).NotTo(HaveOccurred(), tt.cr.Name)
		for _, object := range rendered.Objects {
			if object.GetNamespace() == tt.cr.Namespace {
				continue
			}
			kinds[object.GetKind()] = true
			var typed client.Object = object
			if known, err := testScheme.New(object.GroupVersionKind()); err == nil {
				g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, known)).To(Succeed())
				typed = known.(client.Object)
			}
			labels := object.GetLabels()
			owner := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: labels[render.LabelOwnerNamespace],
				Name: labels[render.LabelOwnerName], UID: types.UID(labels[render.LabelOwnerUID])}}
			g.Expect(ownership.OwnedBy(typed, owner)).To(BeTrue(), "%s %s of %s", object.GetKind(), object.GetName(), tt.cr.Name)
			g.Expect(isOutsideOwnerNamespace(typed)).To(BeTrue())
			swept := object.GroupVersionKind() == render.PrometheusRuleGVK ||
				slices.ContainsFunc(strayKinds, func(kind childKind) bool { return kind.name == object.GetKind() })
			g.Expect(swept).To(BeTrue(), "the sweep looks for no %s", object.GetKind())
		}
	}
	g.Expect(kinds).To(HaveKey("ClusterRoleBinding"))
	g.Expect(kinds).To(HaveKey("RoleBinding"))
	g.Expect(kinds).To(HaveKey("PrometheusRule"))
}

// renderedBinding is the ClusterRoleBinding name as render renders it for cr.
func renderedBinding(t *testing.T, cr *v1.SecondaryScheduler, name string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	bindings, err := render.Bindings(cr)
	if err != nil {
		t.Fatal(err)
	}
	for _, binding := range bindings {
		if binding.Kind == "ClusterRoleBinding" && binding.Name == name {
			return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: render.OwnerLabels(cr)},
				RoleRef: binding.RoleRef, Subjects: binding.Subjects}
		}
	}
	t.Fatalf("render renders no ClusterRoleBinding %s", name)
	return nil
}

// deleteWithoutFinalizer deletes cr as a namespace editor could before the admission
// policy refused it: its finalizers removed, and then, with that version as precondition
// (the operator may add its finalizer back meanwhile), deleted.
func (s *scenario) deleteWithoutFinalizer(cr *v1.SecondaryScheduler) {
	s.t.Helper()
	s.g.Eventually(func() error {
		current := &v1.SecondaryScheduler{}
		if err := adminClient.Get(s.ctx, client.ObjectKeyFromObject(cr), current); err != nil {
			return err
		}
		current.Finalizers = nil
		if err := adminClient.Update(s.ctx, current); err != nil {
			return err
		}
		return adminClient.Delete(s.ctx, current, client.Preconditions{UID: ptr.To(current.UID), ResourceVersion: ptr.To(current.ResourceVersion)})
	}).Should(Succeed())
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(cr.DeepCopy())) }).Should(BeTrue())
}

// collectGarbageOf plays the garbage collector, which envtest does not run: it deletes
// the objects in cr's namespace that cr, deleted, controlled.
func (s *scenario) collectGarbageOf(cr *v1.SecondaryScheduler) {
	s.t.Helper()
	for _, kind := range allChildKinds {
		if kind.clusterScoped {
			continue
		}
		list := kind.list()
		s.g.Expect(adminClient.List(s.ctx, list, client.InNamespace(cr.Namespace), ownership.NameSelector(cr))).To(Succeed())
		s.g.Expect(meta.EachListItem(list, func(item runtime.Object) error {
			object := item.(client.Object)
			if controller := metav1.GetControllerOf(object); controller != nil && controller.UID == cr.UID {
				return client.IgnoreNotFound(adminClient.Delete(s.ctx, object))
			}
			return nil
		})).To(Succeed())
	}
	// And the pods of the Deployment's ReplicaSet.
	s.g.Expect(adminClient.DeleteAllOf(s.ctx, &corev1.Pod{}, client.InNamespace(cr.Namespace),
		client.MatchingLabels(render.PodSelector(cr)), client.GracePeriodSeconds(0))).To(Succeed())
}

// sweptLogLines are the lines of the operator's log telling that it swept an object of
// the SecondaryScheduler of uid in namespace.
func sweptLogLines(namespace string, uid types.UID) []string {
	var lines []string
	for line := range strings.Lines(operatorLog.String()) {
		if strings.Contains(line, "deleted an object of a deleted SecondaryScheduler") && strings.Contains(line, namespace) && strings.Contains(line, string(uid)) {
			lines = append(lines, line)
		}
	}
	return lines
}
