package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// The tests in this file check the promises of docs/security.md from the outside: what a
// tenant, another team or a forged object can make the operator do.

// Someone's own Deployment under the scheduler's name is reported, and deleting the
// SecondaryScheduler leaves it as it was.
func TestSecurityForeignDeploymentSurvivesDeletion(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("squatted")
	theirs := foreignDeployment(render.WorkloadName(cr))
	s.create(theirs, cr)
	taken := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonObjectNameTaken)
	s.g.Expect(taken.Message).To(ContainSubstring("Deployment " + s.namespace + "/squatted-scheduler already exists"))
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Finalizers).To(ContainElement(Finalizer), "deletion goes through the operator's finalizer")
	s.g.Expect(s.get(theirs)).To(Succeed())
	before := theirs.DeepCopy()

	s.g.Expect(adminClient.Delete(s.ctx, cr)).To(Succeed())
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(cr)) }).Should(BeTrue(), "the finalizer lets the resource go")
	s.g.Consistently(func() error { return s.get(theirs) }).Should(Succeed())
	s.g.Expect(theirs.UID).To(Equal(before.UID))
	s.g.Expect(theirs.ResourceVersion).To(Equal(before.ResourceVersion), "someone else's Deployment was changed")
	s.g.Expect(s.clusterScopedChildren(cr)).To(BeEmpty())
}

// Removed deletes the scheduler's objects, and only them: neither someone else's object
// under its name nor one that forges its owner labels with another UID.
func TestSecurityRemovedDeletesOnlyOurs(t *testing.T) {
	s := newScenario(t)
	squatted := binPacking("squatted")
	theirs := configMap(render.ConfigObjectName(squatted), map[string]string{"owner": "another team"})
	s.create(theirs, squatted)
	s.expectCondition(squatted, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonObjectNameTaken)
	s.update(squatted, func() { squatted.Spec.ManagementState = v1.Removed })
	s.expectCondition(squatted, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonRemoved)
	s.expectUnchanged(theirs)

	running := binPacking("running")
	s.createRunning(running)
	s.g.Expect(s.get(running)).To(Succeed())
	forged := map[string]string{
		render.LabelManagedBy:      render.ManagedByValue,
		render.LabelOwnerNamespace: running.Namespace,
		render.LabelOwnerName:      running.Name,
		render.LabelOwnerUID:       "not-the-uid",
	}
	decoy := configMap("decoy", map[string]string{"owner": "another team"})
	decoy.Labels = forged
	decoyBinding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "decoy:" + s.namespace, Labels: forged},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}
	s.create(decoy, decoyBinding)
	t.Cleanup(func() { _ = adminClient.Delete(s.ctx, decoyBinding) })
	s.g.Expect(s.namespacedChildren(running)).To(HaveLen(8 + 1))
	s.g.Expect(s.clusterScopedChildren(running)).To(HaveLen(3 + 1))

	s.update(running, func() { running.Spec.ManagementState = v1.Removed })
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(running) }).Should(BeNil())
	// Its pods have not stopped yet: Available does not say the scheduler is gone.
	stopping := s.expectCondition(running, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonRemoved)
	s.g.Expect(stopping.Message).To(ContainSubstring("its pods are stopping"))
	// envtest runs no ReplicaSet controller: the pods of the deleted Deployment go here.
	s.g.Expect(adminClient.DeleteAllOf(s.ctx, &corev1.Pod{}, client.InNamespace(s.namespace),
		client.MatchingLabels(render.PodSelector(running)), client.GracePeriodSeconds(0))).To(Succeed())
	s.g.Eventually(func() []string { return namesOf(s.namespacedChildren(running)) }).Should(Equal([]string{"ConfigMap/decoy"}))
	s.g.Eventually(func() []string { return s.clusterScopedChildren(running) }).Should(Equal([]string{"ClusterRoleBinding/" + decoyBinding.Name}))
	s.expectCondition(running, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonRemoved)
	s.expectUnchanged(decoy, decoyBinding, theirs)
}

// A binding is the operator's only as it renders it: one that carries a scheduler's owner
// labels, its UID included, but grants another role or to another subject is neither
// deleted with the scheduler nor pruned, and the scheduler's own binding, once someone
// adds a subject to it, is no longer its to change.
func TestSecurityBindingsAreOursOnlyAsRendered(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("labelled-bindings")
	s.createRunning(cr)
	s.g.Expect(s.get(cr)).To(Succeed())
	labels := render.OwnerLabels(cr)
	alice := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}
	schedulerAccount := []rbacv1.Subject{{Kind: "ServiceAccount", Name: render.WorkloadName(cr), Namespace: cr.Namespace}}
	forged := []client.Object{
		// A platform team's grant that someone labelled as the scheduler's.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view-for-alice:" + s.namespace, Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: alice},
		// The scheduler's role, granted to another ServiceAccount.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scheduler-for-default:" + s.namespace, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kube-scheduler"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: s.namespace}}},
		// The scheduler's ServiceAccount, bound to a role the operator never binds.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "edit-for-scheduler:" + s.namespace, Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}, Subjects: schedulerAccount},
		// In kube-system, which no owner reference reaches.
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: render.AuthenticationReaderNamespace, Name: "reader-for-alice:" + s.namespace, Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}, Subjects: alice},
		// In the scheduler's namespace, without an owner reference: not rendered, so
		// pruning would delete it were labels proof.
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "view-for-alice", Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: alice},
	}
	s.create(forged...)
	t.Cleanup(func() {
		for _, object := range forged {
			_ = adminClient.Delete(s.ctx, object)
		}
	})

	// Someone adds a subject to the scheduler's own binding: it grants more than the
	// operator renders, and the operator says so rather than change it back or delete it.
	tampered := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "volume-scheduler")}}
	s.update(tampered, func() { tampered.Subjects = append(tampered.Subjects, alice...) })
	t.Cleanup(func() { _ = adminClient.Delete(s.ctx, tampered) })
	taken := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonObjectNameTaken)
	s.g.Expect(taken.Message).To(ContainSubstring("ClusterRoleBinding " + tampered.Name + " already exists and does not belong to this SecondaryScheduler"))
	s.g.Expect(taken.Message).To(ContainSubstring("roleRef and subjects the operator renders"))
	s.g.Expect(s.get(tampered)).To(Succeed())

	s.g.Expect(adminClient.Delete(s.ctx, cr)).To(Succeed())
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(cr)) }).Should(BeTrue(), "the finalizer lets the resource go")
	// The finalizer has run: what it deleted is gone, and what it did not, it left as it was.
	s.g.Expect(s.clusterScopedChildren(cr)).To(ConsistOf(
		"ClusterRoleBinding/view-for-alice:"+s.namespace, "ClusterRoleBinding/scheduler-for-default:"+s.namespace,
		"ClusterRoleBinding/edit-for-scheduler:"+s.namespace, "ClusterRoleBinding/"+tampered.Name,
		"RoleBinding/kube-system/reader-for-alice:"+s.namespace))
	s.expectUnchanged(slices.Concat(forged, []client.Object{tampered})...)
}

// A foreign ServiceAccount under the metrics ServiceAccount's name stops the scheduler
// before any of its identity exists: no binding, no token. Once it is gone, the
// operator makes its own and requests one token.
func TestSecurityForeignMetricsServiceAccountIsNotTouched(t *testing.T) {
	s := newScenario(t)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "watched"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			// A closed loopback port: no Prometheus is needed to get a token.
			Metrics: &v1.LoadMetrics{Address: "http://127.0.0.1:1", ServiceAccountToken: &v1.ServiceAccountTokenAuth{}}}},
	}
	theirLabels := map[string]string{"team": "payments", "app.kubernetes.io/name": "payments-exporter"}
	theirs := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: render.MetricsServiceAccountName(cr), Labels: theirLabels}}
	s.create(theirs, cr)
	taken := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonObjectNameTaken)
	s.g.Expect(taken.Message).To(ContainSubstring("ServiceAccount " + s.namespace + "/watched-scheduler-metrics already exists"))

	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "metrics-token")}}
	tokenSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.MetricsTokenSecretName(cr)}}
	s.g.Expect(s.get(theirs)).To(Succeed())
	before := theirs.DeepCopy()
	untouched := func() string {
		current := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: before.Namespace, Name: before.Name}}
		if err := s.get(current); err != nil {
			return "their ServiceAccount: " + err.Error()
		}
		if current.UID != before.UID || current.ResourceVersion != before.ResourceVersion || !equality.Semantic.DeepEqual(current.Labels, theirLabels) {
			return fmt.Sprintf("their ServiceAccount changed: labels %v, owners %v", current.Labels, current.OwnerReferences)
		}
		if err := s.get(binding); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("ClusterRoleBinding %s: %v", binding.Name, err)
		}
		if err := s.get(tokenSecret); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("Secret %s: %v", tokenSecret.Name, err)
		}
		return fmt.Sprintf("%d tokens requested", metricsTokenRequests(cr))
	}
	s.g.Consistently(untouched, 5*time.Second).Should(Equal("0 tokens requested"))

	s.g.Expect(adminClient.Delete(s.ctx, theirs)).To(Succeed())
	ours := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.MetricsServiceAccountName(cr)}}
	s.g.Eventually(func() string { _ = s.get(ours); return ours.Labels[render.LabelOwnerUID] }).Should(Equal(string(cr.UID)), "the operator makes its own")
	s.g.Expect(metav1.GetControllerOf(ours)).To(HaveField("UID", cr.UID))
	s.g.Eventually(func() []byte { _ = s.get(tokenSecret); return tokenSecret.Data["token"] }).ShouldNot(BeEmpty())
	s.g.Eventually(func() error { return s.get(binding) }).Should(Succeed())
	s.g.Expect(binding.Labels).To(HaveKeyWithValue(render.LabelOwnerUID, string(cr.UID)))

	// Further reconciles, woken by changes of the ServiceAccount and by the metrics probe,
	// keep the token. (A change of the resource's annotations wakes no reconcile: the
	// operator watches its spec, not its metadata.)
	for i := range 2 {
		reconciles := reconcilesOf(cr)
		s.update(ours, func() { metav1.SetMetaDataAnnotation(&ours.ObjectMeta, "touched", fmt.Sprint(i)) })
		s.g.Eventually(func() int { return reconcilesOf(cr) }).Should(BeNumerically(">", reconciles))
	}
	reconciles := reconcilesOf(cr)
	s.g.Eventually(func() int { return reconcilesOf(cr) }).Should(BeNumerically(">=", reconciles+2))
	s.g.Expect(metricsTokenRequests(cr)).To(Equal(1), "one token is requested, and kept")
}

// A metrics token bound to a ClusterRole the admin did not allow is refused before any
// of its identity exists.
func TestSecurityMetricsTokenClusterRoleAllowList(t *testing.T) {
	s := newScenario(t)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "greedy"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: "http://127.0.0.1:1", ServiceAccountToken: &v1.ServiceAccountTokenAuth{ClusterRole: "cluster-admin"}}}},
	}
	s.create(cr)
	refused := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonClusterRoleNotAllowed)
	s.g.Expect(refused.Message).To(And(ContainSubstring("cluster-admin"), ContainSubstring("--metrics-token-cluster-roles")))

	metricsAccount := "system:serviceaccount:" + s.namespace + ":" + render.MetricsServiceAccountName(cr)
	nothingOfTheIdentity := func() []string {
		var found []string
		bindings := &rbacv1.ClusterRoleBindingList{}
		s.g.Expect(adminClient.List(s.ctx, bindings, client.MatchingLabels{render.LabelManagedBy: render.ManagedByValue})).To(Succeed())
		for _, binding := range bindings.Items {
			if binding.RoleRef.Name == "cluster-admin" {
				found = append(found, "ClusterRoleBinding/"+binding.Name)
			}
		}
		for _, object := range []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.MetricsServiceAccountName(cr)}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.MetricsTokenSecretName(cr)}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "metrics-token")}},
		} {
			if err := s.get(object); !apierrors.IsNotFound(err) {
				found = append(found, fmt.Sprintf("%T/%s: %v", object, object.GetName(), err))
			}
		}
		if s.accessAllowed(metricsAccount, serviceAccountGroups(s.namespace), authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets"}) {
			found = append(found, metricsAccount+" may read every Secret")
		}
		return found
	}
	s.g.Consistently(nothingOfTheIdentity).Should(BeEmpty())
	s.g.Expect(metricsTokenRequests(cr)).To(BeZero())
}

// A SecondaryScheduler outside the allowed namespaces runs nothing, and gives no one in
// its namespace a scheduler's power; namespace editors cannot create one.
func TestSecurityNamespaceNotAllowed(t *testing.T) {
	s := newScenario(t)
	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	s.g.Expect(adminClient.Create(s.ctx, tenant)).To(Succeed())
	s.g.Expect(schedulerNamespaces).NotTo(ContainElement(tenant.Name))
	cr := binPacking("packer")
	cr.Namespace = tenant.Name
	s.create(cr)
	t.Cleanup(func() {
		_ = adminClient.Delete(s.ctx, cr)
		_ = adminClient.Delete(s.ctx, tenant)
	})

	refused := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonNamespaceNotAllowed)
	s.g.Expect(refused.Message).To(And(ContainSubstring("namespace "+tenant.Name), ContainSubstring("--scheduler-namespaces")))
	s.expectCondition(cr, v1.ConditionStalled, metav1.ConditionTrue, v1.ReasonNamespaceNotAllowed)
	createdAnything := func() []string {
		var found []string
		if err := s.get(cr); err != nil || slices.Contains(cr.Finalizers, Finalizer) {
			found = append(found, fmt.Sprintf("finalizers %v (%v)", cr.Finalizers, err))
		}
		found = append(found, s.clusterScopedChildren(cr)...)
		found = append(found, namesOf(s.namespacedChildren(cr))...)
		accounts := &corev1.ServiceAccountList{}
		s.g.Expect(adminClient.List(s.ctx, accounts, client.InNamespace(tenant.Name))).To(Succeed())
		for _, account := range accounts.Items {
			found = append(found, "ServiceAccount/"+account.Name)
		}
		deployments := &appsv1.DeploymentList{}
		s.g.Expect(adminClient.List(s.ctx, deployments, client.InNamespace(tenant.Name))).To(Succeed())
		for _, deployment := range deployments.Items {
			found = append(found, "Deployment/"+deployment.Name)
		}
		return found
	}
	s.g.Consistently(createdAnything).Should(BeEmpty())

	// No ServiceAccount of the namespace may do what a scheduler may. envtest runs no
	// controller-manager, so not even "default" exists here; a SubjectAccessReview needs
	// no ServiceAccount, and a binding names its subject, so the names the scheduler's own
	// ServiceAccounts would have are reviewed too.
	accounts := &corev1.ServiceAccountList{}
	s.g.Expect(adminClient.List(s.ctx, accounts, client.InNamespace(tenant.Name))).To(Succeed())
	names := make([]string, 0, 3+len(accounts.Items))
	names = append(names, "default", render.WorkloadName(cr), render.MetricsServiceAccountName(cr))
	for _, account := range accounts.Items {
		names = append(names, account.Name)
	}
	for _, name := range names {
		user := "system:serviceaccount:" + tenant.Name + ":" + name
		for _, attributes := range []authorizationv1.ResourceAttributes{
			{Namespace: s.namespace, Verb: "create", Resource: "pods", Subresource: "binding"},
			{Verb: "delete", Resource: "pods"},
			{Verb: "get", Resource: "secrets"},
		} {
			s.g.Expect(s.accessAllowed(user, serviceAccountGroups(tenant.Name), attributes)).To(BeFalse(), "%s may %+v", user, attributes)
		}
	}

	// Namespace editors and admins cannot create SecondarySchedulers. envtest runs no
	// kube-controller-manager, so ClusterRole aggregation does not happen here: below, the
	// test plays its aggregation controller once. Aggregation itself is covered elsewhere:
	// test/rbacallowlist checks the aggregation labels of the shipped roles, and the e2e
	// suite checks editors in a cluster that aggregates.
	s.installShippedClusterRoles("secondaryscheduler_admin_role.yaml", "secondaryscheduler_viewer_role.yaml")
	s.aggregateClusterRoles("view", "edit", "admin")
	for _, role := range []string{"edit", "admin"} {
		user := "tenant-" + role
		s.create(&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenant.Name, Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   userSubjects(user),
		})
		secondarySchedulers := func(verb string) authorizationv1.ResourceAttributes {
			return authorizationv1.ResourceAttributes{Namespace: tenant.Name, Verb: verb, Group: v1.GroupVersion.Group, Resource: "secondaryschedulers"}
		}
		// The binding and the aggregation work: the viewer role reaches them through view.
		s.g.Eventually(func() bool { return s.accessAllowed(user, nil, secondarySchedulers("list")) }).Should(BeTrue(), "%s may list SecondarySchedulers", user)
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			s.g.Expect(s.accessAllowed(user, nil, secondarySchedulers(verb))).To(BeFalse(), "%s may %s SecondarySchedulers", user, verb)
		}
	}
}

// The scheduler elects its leader with a Lease the operator made for it alone: never
// the control plane's, even for a resource named kube, and never someone else's.
func TestSecurityLeaseIsOursAlone(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("kube")
	s.create(cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Expect(s.get(cr)).To(Succeed())
	var config struct {
		LeaderElection struct {
			LeaderElect       bool   `json:"leaderElect"`
			ResourceLock      string `json:"resourceLock"`
			ResourceName      string `json:"resourceName"`
			ResourceNamespace string `json:"resourceNamespace"`
		} `json:"leaderElection"`
	}
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).ShouldNot(BeEmpty())
	s.g.Expect(yaml.Unmarshal([]byte(s.renderedConfig(cr)), &config)).To(Succeed())
	s.g.Expect(config.LeaderElection.LeaderElect).To(BeTrue())
	s.g.Expect(config.LeaderElection.ResourceLock).To(Equal("leases"))
	s.g.Expect(config.LeaderElection.ResourceName).To(Equal("kube-scheduler-lease"))
	s.g.Expect(config.LeaderElection.ResourceNamespace).To(Equal(s.namespace))

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "kube-scheduler-lease"}}
	s.g.Expect(s.get(lease)).To(Succeed())
	s.g.Expect(lease.Labels).To(And(HaveKeyWithValue(render.LabelOwnerUID, string(cr.UID)),
		HaveKeyWithValue(render.LabelOwnerName, cr.Name), HaveKeyWithValue(render.LabelOwnerNamespace, s.namespace)))
	s.g.Expect(metav1.GetControllerOf(lease)).To(HaveField("UID", cr.UID))
	leases := &coordinationv1.LeaseList{}
	s.g.Expect(adminClient.List(s.ctx, leases, ownership.NameSelector(cr))).To(Succeed())
	s.g.Expect(leases.Items).To(HaveLen(1), "the operator makes one Lease, in the resource's namespace")

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.LeaseName(cr)}}
	s.g.Expect(s.get(role)).To(Succeed())
	leaseRules := 0
	for _, rule := range role.Rules {
		if !slices.Contains(rule.Resources, "leases") && !slices.Contains(rule.Resources, rbacv1.ResourceAll) {
			continue
		}
		leaseRules++
		s.g.Expect(rule.Verbs).NotTo(Or(ContainElement("create"), ContainElement(rbacv1.VerbAll)), "the scheduler may create Leases")
		s.g.Expect(rule.ResourceNames).To(Equal([]string{"kube-scheduler-lease"}))
	}
	s.g.Expect(leaseRules).To(Equal(1))

	// A Lease of someone else under the name is reported, and outlives the resource.
	held := binPacking("held")
	theirs := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: render.LeaseName(held)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone-else"), LeaseDurationSeconds: ptr.To[int32](15)}}
	s.create(theirs, held)
	taken := s.expectCondition(held, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonObjectNameTaken)
	s.g.Expect(taken.Message).To(ContainSubstring("Lease " + s.namespace + "/held-scheduler-lease already exists"))
	s.g.Expect(s.deployment(held)).To(BeNil())
	s.g.Expect(adminClient.Delete(s.ctx, held)).To(Succeed())
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(held)) }).Should(BeTrue(), "the finalizer lets the resource go")
	s.expectUnchanged(theirs)
}

// The profiles of a Custom configuration are claims like spec.schedulerName: an older
// resource keeps its name, and a configuration without spec.schedulerName serves the
// names its profiles give.
func TestSecurityCustomProfilesAreClaims(t *testing.T) {
	s := newScenario(t)
	alpha := binPacking("alpha")
	s.create(alpha)
	s.expectCondition(alpha, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	// Creation timestamps have a resolution of one second.
	time.Sleep(1100 * time.Millisecond)

	beta := custom("beta", "beta-config")
	beta.Spec.SchedulerName = "beta"
	s.create(configMap("beta-config", map[string]string{"config.yaml": profilesConfig("beta", "alpha")}), beta)
	conflict := s.expectCondition(beta, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonSchedulerNameConflict)
	s.g.Expect(conflict.Message).To(ContainSubstring("SecondaryScheduler " + s.namespace + "/alpha, created earlier, already runs scheduler alpha"))
	s.g.Consistently(func() *appsv1.Deployment { return s.deployment(beta) }).Should(BeNil())
	s.expectCondition(alpha, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	openShiftStyle := custom("openshift-style", "openshift-style-config")
	s.create(configMap("openshift-style-config", map[string]string{"config.yaml": profilesConfig("gamma", "delta")}), openShiftStyle)
	s.expectCondition(openShiftStyle, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Expect(s.get(openShiftStyle)).To(Succeed())
	s.g.Expect(openShiftStyle.Status.SchedulerNames).To(Equal([]string{"delta", "gamma"}))
	var rendered struct {
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
		} `json:"profiles"`
	}
	s.g.Expect(yaml.Unmarshal([]byte(s.renderedConfig(openShiftStyle)), &rendered)).To(Succeed())
	s.g.Expect(rendered.Profiles).To(ConsistOf(HaveField("SchedulerName", "gamma"), HaveField("SchedulerName", "delta")))
}

// foreignDeployment is a Deployment of another team, labelled as theirs.
func foreignDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": "payments"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "payments", Image: "registry.example/payments:v1"}}},
			},
		},
	}
}

// profilesConfig is a valid custom configuration with one profile per scheduler name.
func profilesConfig(schedulerNames ...string) string {
	var config strings.Builder
	config.WriteString("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n")
	for _, name := range schedulerNames {
		fmt.Fprintf(&config, "- schedulerName: %s\n  plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: 1\n", name)
	}
	return config.String()
}

// expectUnchanged checks, for a while, that objects (read by the caller before) still
// exist with the same UID and resourceVersion: nothing wrote or replaced them.
func (s *scenario) expectUnchanged(objects ...client.Object) {
	s.t.Helper()
	for _, object := range objects {
		if object.GetUID() == "" {
			s.g.Expect(s.get(object)).To(Succeed())
		}
	}
	s.g.Consistently(func() []string {
		var changed []string
		for _, object := range objects {
			current := object.DeepCopyObject().(client.Object)
			if err := s.get(current); err != nil {
				changed = append(changed, fmt.Sprintf("%T %s: %v", object, object.GetName(), err))
			} else if current.GetUID() != object.GetUID() || current.GetResourceVersion() != object.GetResourceVersion() {
				changed = append(changed, fmt.Sprintf("%T %s changed", object, object.GetName()))
			}
		}
		return changed
	}).Should(BeEmpty())
}

// namesOf names objects by kind and name, for messages and comparisons.
func namesOf(objects []client.Object) []string {
	names := make([]string, 0, len(objects))
	for _, object := range objects {
		kind := strings.TrimPrefix(fmt.Sprintf("%T", object), "*")
		names = append(names, kind[strings.LastIndex(kind, ".")+1:]+"/"+object.GetName())
	}
	slices.Sort(names)
	return names
}

// accessAllowed asks the API server whether user, in groups, may do what attributes say.
func (s *scenario) accessAllowed(user string, groups []string, attributes authorizationv1.ResourceAttributes) bool {
	s.t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups, ResourceAttributes: &attributes}}
	s.g.Expect(adminClient.Create(s.ctx, review)).To(Succeed())
	return review.Status.Allowed
}

// serviceAccountGroups are the groups the API server puts a ServiceAccount of namespace in.
func serviceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// installShippedClusterRoles creates the ClusterRoles of the named config/rbac files that
// do not exist yet, as the installer would.
func (s *scenario) installShippedClusterRoles(files ...string) {
	s.t.Helper()
	for _, file := range files {
		role := &rbacv1.ClusterRole{}
		s.g.Expect(decodeShipped(file, "ClusterRole", role)).To(Succeed())
		if err := adminClient.Create(s.ctx, role); !apierrors.IsAlreadyExists(err) {
			s.g.Expect(err).NotTo(HaveOccurred())
		}
	}
}

// aggregateClusterRoles plays the ClusterRole aggregation controller, which envtest does
// not run, for the named roles in order: each gets the rules of every ClusterRole its
// aggregation rule selects.
func (s *scenario) aggregateClusterRoles(names ...string) {
	s.t.Helper()
	for _, name := range names {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.update(role, func() {
			s.g.Expect(role.AggregationRule).NotTo(BeNil(), "ClusterRole %s aggregates nothing", name)
			var rules []rbacv1.PolicyRule
			for _, selector := range role.AggregationRule.ClusterRoleSelectors {
				selected := &rbacv1.ClusterRoleList{}
				s.g.Expect(adminClient.List(s.ctx, selected, client.MatchingLabels(selector.MatchLabels))).To(Succeed())
				for _, other := range selected.Items {
					for _, rule := range other.Rules {
						if other.Name != name && !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, rule) }) {
							rules = append(rules, rule)
						}
					}
				}
			}
			role.Rules = rules
		})
	}
}

// metricsTokenRequests counts the metrics tokens the operator logged requesting for cr.
func metricsTokenRequests(cr *v1.SecondaryScheduler) int {
	return countLogLines("requested a new metrics token", cr)
}

// reconcilesOf counts the reconciles of cr the operator started.
func reconcilesOf(cr *v1.SecondaryScheduler) int {
	return countLogLines("\tReconciling\t", cr)
}

// countLogLines counts the operator's log lines with message about cr.
func countLogLines(message string, cr *v1.SecondaryScheduler) int {
	count := 0
	for line := range strings.Lines(operatorLog.String()) {
		if strings.Contains(line, message) && strings.Contains(line, `"namespace": "`+cr.Namespace+`"`) &&
			strings.Contains(line, `"name": "`+cr.Name+`"`) {
			count++
		}
	}
	return count
}
