//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/olminstall"
)

// The operator's Deployment and ServiceAccount, as every installer names them, and the
// namespace dist/install.yaml installs it in.
const (
	installNamespace       = "secondary-scheduler-operator"
	operatorDeployment     = "secondary-scheduler-operator-controller-manager"
	operatorServiceAccount = "secondary-scheduler-operator-controller-manager"
	operatorLeaderLease    = "secondary-scheduler-operator.operator.secondary-scheduler.io"
)

// installCluster is a cluster of its own for one install spec: an install starts from a
// cluster without the operator (not even its CRD), and the suite's own operator must not
// see what is installed. Its podrunner runs the installed operator's pod as the manager
// binary under the pod's ServiceAccount token, so the operator has exactly the
// permissions the manifests grant; the API server's audit log shows what it did with them.
type installCluster struct {
	name, dir, kubeconfig, auditLog string
	client                          client.Client
}

func newInstallCluster(name string, extraBinaries ...string) *installCluster {
	return newInstallClusterWith(name, nil, extraBinaries...)
}

// withoutMutatingAdmissionPolicy makes a cluster without MutatingAdmissionPolicy, as
// Kubernetes before 1.36 is: its API is not served, and its admission plugin is off.
var withoutMutatingAdmissionPolicy = []string{"KUBE_APISERVER_ARGS=" +
	"runtime-config=admissionregistration.k8s.io/v1/mutatingadmissionpolicies=false,admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings=false " +
	"disable-admission-plugins=MutatingAdmissionPolicy"}

// newInstallClusterWith is newInstallCluster, with env for hack/local-cluster.sh.
func newInstallClusterWith(name string, env []string, extraBinaries ...string) *installCluster {
	dir := filepath.Join(outputDir, name)
	localCluster(name, dir, "down")
	localCluster(name, dir, "up", append([]string{"APPLY_CRD=false"}, env...)...)
	c := connectInstallCluster(name, dir)
	c.createNamespace(workloadNamespace)
	podrunner := startPodrunner("podrunner-"+name, c.kubeconfig, filepath.Join(dir, "podrunner"), extraBinaries)
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			dumpInstallCluster(c, dir)
		}
		podrunner.stop()
		if os.Getenv("E2E_KEEP_CLUSTER") == "" {
			localCluster(name, dir, "down")
		}
	})
	return c
}

// connectInstallCluster is a client of the local cluster name, made in dir.
func connectInstallCluster(name, dir string) *installCluster {
	c := &installCluster{name: name, dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig"), auditLog: localCluster(name, dir, "audit-log")}
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	c.client, err = client.New(config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func (c *installCluster) kubectl(args ...string) string {
	output, err := runKubectl(c.kubeconfig, args...)
	Expect(err).NotTo(HaveOccurred())
	return output
}

// condition is FIELD (status, reason or message) of condition TYPE of SecondaryScheduler
// NAMESPACE/NAME, as kubectl reads it; empty while the condition is not there.
func (c *installCluster) condition(namespace, name, conditionType, field string) string {
	return c.kubectl("-n", namespace, "get", "secondaryscheduler/"+name, "-o",
		fmt.Sprintf("jsonpath={.status.conditions[?(@.type=='%s')].%s}", conditionType, field))
}

func dumpInstallCluster(c *installCluster, dir string) {
	output, _ := runKubectl(c.kubeconfig, "get", "secondaryschedulers,deployments,pods,roles,rolebindings,events", "-A", "-o", "yaml")
	_ = os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(output), 0o644)
	// The containers' logs, of the pods a real node runs (kwok's have none), before the
	// node and its logs go: the current and, after a restart, the previous container's.
	pods, _ := runKubectl(c.kubeconfig, "get", "pods", "-A", "--field-selector", "spec.nodeName="+realNodeName,
		"-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{'\\n'}{end}")
	logs := filepath.Join(dir, "logs")
	_ = os.MkdirAll(logs, 0o755)
	for _, pod := range strings.Fields(pods) {
		namespace, name, _ := strings.Cut(pod, "/")
		for _, previous := range []bool{false, true} {
			file := namespace + "_" + name + ".log"
			if previous {
				file = namespace + "_" + name + ".previous.log"
			}
			if output, err := runKubectl(c.kubeconfig, "-n", namespace, "logs", name, "--all-containers", "--prefix", fmt.Sprintf("--previous=%t", previous)); err == nil && output != "" {
				_ = os.WriteFile(filepath.Join(logs, file), []byte(output), 0o644)
			}
		}
	}
	fmt.Fprintf(GinkgoWriter, "install cluster %s: objects in %s, pod logs under %s (podrunner) or %s (a real node)\n", c.name, dir, filepath.Join(dir, "podrunner", "pods"), logs)
}

// waitOperatorRunning waits until the operator's Deployment has rolled out: its pod, run
// by podrunner, answers its readiness probe.
func (c *installCluster) waitOperatorRunning(namespace string) {
	c.kubectl("-n", namespace, "rollout", "status", "deployment/"+operatorDeployment, "--timeout=120s")
}

// upgradeNamespace is where the upgrade spec installs the operator and its schedulers.
const upgradeNamespace = "scheduling"

// workloadNamespace is where the install specs' workloads run: any namespace's pods may
// ask for a secondary scheduler.
const workloadNamespace = "apps"

// expectSchedulerServes creates a BinPacking SecondaryScheduler in namespace, waits until
// it is Available as a user would, and checks that it binds pods of its name.
func (c *installCluster) expectSchedulerServes(namespace, name string) {
	Expect(c.client.Create(ctx, binPacking(namespace, name))).To(Succeed())
	c.kubectl("-n", namespace, "wait", "--for=condition=Available", "secondaryscheduler/"+name, "--timeout=120s")
	c.expectBinds(name, name+"-workload")
}

func (c *installCluster) expectBinds(schedulerName, prefix string) {
	namespace := workloadNamespace
	names := make([]string, 0, 3)
	for i := range 3 {
		pod := workload(namespace, fmt.Sprintf("%s-%d", prefix, i), schedulerName, "100m", "registry.example/app:1")
		Expect(c.client.Create(ctx, pod)).To(Succeed())
		names = append(names, pod.Name)
	}
	for _, name := range names {
		Eventually(func() string {
			pod := &corev1.Pod{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
				return ""
			}
			return pod.Spec.NodeName
		}).Should(HavePrefix("fake-"), "pod %s/%s is bound to a node by %s", namespace, name, schedulerName)
	}
}

func (c *installCluster) createNamespace(name string) {
	Expect(c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

// installBundle applies what the CSV's description tells a cluster admin to apply before
// installing, then installs the bundle in dir as OLM would for group. In that order, as the
// description says: the operator's first request in kube-system finds its Role bound,
// whenever its pod starts (applied after, a quick start was refused there once).
func (c *installCluster) installBundle(dir string, group olminstall.OperatorGroup, replaces *olminstall.Bundle) *olminstall.Bundle {
	bundle, err := olminstall.Read(dir)
	Expect(err).NotTo(HaveOccurred())
	manual, err := bundle.ManualObjects(group.Namespace)
	Expect(err).NotTo(HaveOccurred())
	for _, object := range manual {
		Expect(c.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner("cluster-admin"), client.ForceOwnership)).To(Succeed())
	}
	var replacedCSV *csv.ClusterServiceVersion
	if replaces != nil {
		replacedCSV = replaces.CSV
	}
	Expect((&olminstall.Installer{Client: c.client, Scheme: scheme}).Install(ctx, bundle, group, replacedCSV)).To(Succeed())
	return bundle
}

// operatorRequests reads, from the cluster's audit log, every request the operator's
// ServiceAccount of namespace made.
func (c *installCluster) operatorRequests(namespace string) []auditEvent {
	user := "system:serviceaccount:" + namespace + ":" + operatorServiceAccount
	events := auditRequestsOf(c.auditLog, user)
	Expect(events).NotTo(BeEmpty(), "the audit log %s has requests of %s", c.auditLog, user)
	return events
}

// expectOperatorConfined checks, from the audit log, that the operator of namespace was
// refused nothing it tried (a permission missing from the manifests shows here even when
// the operator retries around it), and that outside its own namespace and those it
// serves it read and wrote only what it is granted there by the install: cluster-wide
// (clusterRules) or, in kube-system, by the Role the install instructions give it.
func (c *installCluster) expectOperatorConfined(namespace string, served []string, clusterRules []rbacv1.PolicyRule) {
	kubeSystemRules := c.rolesBoundTo(metav1.NamespaceSystem, namespace)
	requests := c.operatorRequests(namespace)
	var forbidden, outside []string
	for _, request := range requests {
		if request.ResponseStatus != nil && request.ResponseStatus.Code == 403 {
			forbidden = append(forbidden, request.String())
		}
		ref := request.ObjectRef
		if ref == nil || ref.Namespace == "" || ref.Namespace == namespace || slices.Contains(served, ref.Namespace) {
			continue
		}
		granted := grants(clusterRules, request.Verb, ref.APIGroup, ref.Resource) ||
			ref.Namespace == metav1.NamespaceSystem && grants(kubeSystemRules, request.Verb, ref.APIGroup, ref.Resource)
		if !granted {
			outside = append(outside, request.String())
		}
	}
	Expect(forbidden).To(BeEmpty(), "requests of the operator the API server refused (a permission the manifests lack)")
	Expect(outside).To(BeEmpty(), "requests of the operator outside its namespaces beyond what it is granted there")
	fmt.Fprintf(GinkgoWriter, "%s: the operator made %d requests, none refused, none outside its namespaces beyond its grants\n", c.name, len(requests))
}

// rolesBoundTo are the rules of the Roles of namespace bound to the operator of operatorNamespace.
func (c *installCluster) rolesBoundTo(namespace, operatorNamespace string) []rbacv1.PolicyRule {
	bindings := &rbacv1.RoleBindingList{}
	Expect(c.client.List(ctx, bindings, client.InNamespace(namespace))).To(Succeed())
	var rules []rbacv1.PolicyRule
	for _, binding := range bindings.Items {
		if binding.RoleRef.Kind == "Role" && bindsOperator(binding.Subjects, operatorNamespace) {
			role := &rbacv1.Role{}
			Expect(c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: binding.RoleRef.Name}, role)).To(Succeed())
			rules = append(rules, role.Rules...)
		}
	}
	return rules
}

func bindsOperator(subjects []rbacv1.Subject, operatorNamespace string) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == operatorNamespace && s.Name == operatorServiceAccount
	})
}

func grants(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
	return slices.ContainsFunc(rules, func(rule rbacv1.PolicyRule) bool {
		return slices.Contains(rule.Verbs, verb) && slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource)
	})
}

// clusterRulesOf are the cluster-wide rules an install grants the operator: those of the
// CSV, or of the installer's ClusterRoles bound to the operator.
func clusterRulesOf(bundle *olminstall.Bundle) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, permission := range bundle.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions {
		rules = append(rules, permission.Rules...)
	}
	return rules
}

func (c *installCluster) clusterRulesBoundTo(namespace string) []rbacv1.PolicyRule {
	bindings := &rbacv1.ClusterRoleBindingList{}
	Expect(c.client.List(ctx, bindings)).To(Succeed())
	var rules []rbacv1.PolicyRule
	for _, binding := range bindings.Items {
		if bindsOperator(binding.Subjects, namespace) {
			role := &rbacv1.ClusterRole{}
			Expect(c.client.Get(ctx, client.ObjectKey{Name: binding.RoleRef.Name}, role)).To(Succeed())
			rules = append(rules, role.Rules...)
		}
	}
	return rules
}

// schedulerRollout is what shows whether a scheduler was restarted: the hash of its
// rendered pod template, and its pods with their restart counts.
type schedulerRollout struct {
	podTemplateHash string
	pods            map[types.UID]int32
}

// schedulerRollouts returns the upgrade spec's schedulers by Deployment name.
func (c *installCluster) schedulerRollouts() map[string]schedulerRollout {
	const namespace = upgradeNamespace
	deployments := &appsv1.DeploymentList{}
	Expect(c.client.List(ctx, deployments, client.InNamespace(namespace), client.HasLabels{"app.kubernetes.io/instance"})).To(Succeed())
	rollouts := map[string]schedulerRollout{}
	for _, deployment := range deployments.Items {
		pods := &corev1.PodList{}
		Expect(c.client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(deployment.Spec.Selector.MatchLabels))).To(Succeed())
		rollout := schedulerRollout{podTemplateHash: deployment.Spec.Template.Annotations[render.PodTemplateHashAnnotation], pods: map[types.UID]int32{}}
		for _, pod := range pods.Items {
			restarts := int32(0)
			for _, status := range pod.Status.ContainerStatuses {
				restarts += status.RestartCount
			}
			rollout.pods[pod.UID] = restarts
		}
		rollouts[deployment.Name] = rollout
	}
	return rollouts
}

func readFile(path string) string {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// buildManagerAt builds the manager of commit from this repository's history and returns
// the binary's path.
func buildManagerAt(commit string) string {
	source := filepath.Join(outputDir, "manager-"+commit)
	Expect(os.RemoveAll(source)).To(Succeed())
	Expect(os.MkdirAll(source, 0o755)).To(Succeed())
	run(repoRoot, "bash", "-c", "git archive "+commit+" | tar -x -C "+source)
	// Its code, with today's go.mod as a floor for its dependencies' versions: built with
	// its own, it compiled a thousand packages of the Kubernetes libraries again (8 of a
	// cold CI run's minutes, beside the suites), where a library's patch release changes
	// nothing an upgrade shows. Its own requirements hold where they are newer.
	run(repoRoot, "go", "run", "./hack/gomodfloor", "-floor", "go.mod", filepath.Join(source, "go.mod"))
	run(source, "go", "mod", "tidy")
	binary := filepath.Join(binDir, "manager-"+commit)
	run(source, "go", "build", "-o", binary, ".")
	return binary
}

// leadingOperatorPod is the operator pod of dist/install.yaml holding the leader Lease:
// its identity is its hostname, the pod's name, and a unique suffix.
func (c *installCluster) leadingOperatorPod() corev1.Pod {
	const namespace = installNamespace
	holder := c.leaderOf(namespace)
	pods := &corev1.PodList{}
	Expect(c.client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	for _, pod := range pods.Items {
		if holder != "" && strings.HasPrefix(holder, pod.Name+"_") && pod.DeletionTimestamp == nil {
			return pod
		}
	}
	return corev1.Pod{}
}

func (c *installCluster) leaderOf(namespace string) string {
	lease := &coordinationv1.Lease{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: operatorLeaderLease}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

var _ = Describe("Installing the operator", func() {
	It("from dist/install.yaml, on a cluster without MutatingAdmissionPolicy: the operator runs under its own ServiceAccount, its scheduler binds pods, and a route says it is unsupported", func() {
		c := newInstallClusterWith("install-kubectl", withoutMutatingAdmissionPolicy)
		c.kubectl("apply", "--server-side", "-f", filepath.Join(repoRoot, "dist", "install.yaml"))
		const namespace = installNamespace
		c.waitOperatorRunning(namespace)

		c.expectSchedulerServes(namespace, "bin-packing")
		c.expectAuthorityAtAdmission(namespace, "bin-packing", false)

		By("a route on a cluster that cannot route: reported, and the scheduler runs as usual")
		routed := binPacking(namespace, "routed")
		routed.Spec.Routing = &v1.Routing{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
		Expect(c.client.Create(ctx, routed)).To(Succeed())
		c.kubectl("-n", namespace, "wait", "--for=condition=Available", "secondaryscheduler/routed", "--timeout=120s")
		Eventually(func() string {
			return c.condition(namespace, "routed", "Routing", "reason")
		}).Should(Equal(string(v1.ReasonRoutingUnsupported)))
		c.expectBinds("routed", "routed-workload")

		By("killing the leading operator: a replica takes over once the lease expires")
		holder := c.leaderOf(namespace)
		leader := c.leadingOperatorPod()
		Expect(leader.Name).NotTo(BeEmpty(), "an operator replica leads")
		Expect(syscall.Kill(pidIn(processDirIn(filepath.Join(c.dir, "podrunner"), leader)), syscall.SIGKILL)).To(Succeed())
		// The other replica, or the killed one restarted (a new identity), whichever asks first.
		Eventually(func() string { return c.leaderOf(namespace) }, "45s").Should(And(Not(BeEmpty()), Not(Equal(holder))))
		c.expectSchedulerServes(namespace, "after-fail-over")

		// Elsewhere nothing runs, and the resource says why.
		c.createNamespace("team-a")
		Expect(c.client.Create(ctx, binPacking("team-a", "elsewhere"))).To(Succeed())
		c.kubectl("-n", "team-a", "wait", "--for=condition=Degraded", "secondaryscheduler/elsewhere", "--timeout=60s")
		Expect(c.condition("team-a", "elsewhere", "Degraded", "reason")).
			To(Equal(string(v1.ReasonNamespaceNotAllowed)))

		c.expectOperatorConfined(namespace, nil, c.clusterRulesBoundTo(namespace))
	})

	It("from the bundle as OLM does, in OwnNamespace mode: confined to its namespace", func() {
		c := newInstallCluster("install-own")
		const namespace = "scheduling"
		c.createNamespace(namespace)
		group := olminstall.OperatorGroup{Name: "scheduling", Namespace: namespace, TargetNamespaces: []string{namespace}}
		bundle := c.installBundle(filepath.Join(repoRoot, "bundle"), group, nil)
		c.waitOperatorRunning(namespace)

		c.expectSchedulerServes(namespace, "bin-packing")
		c.expectAuthorityAtAdmission(namespace, "bin-packing", true)
		c.expectOperatorConfined(namespace, nil, clusterRulesOf(bundle))

		// OLM refuses an OperatorGroup of all namespaces: under it, the namespaced
		// permissions would become cluster-wide (Secrets, Roles and token requests in every
		// namespace) while schedulers still run only in allowed namespaces.
		Expect(bundle.Supports("AllNamespaces")).To(BeFalse())
		err := (&olminstall.Installer{Client: c.client, Scheme: scheme}).Install(ctx, bundle,
			olminstall.OperatorGroup{Name: "global", Namespace: "operators"}, nil)
		Expect(err).To(MatchError(olminstall.ErrUnsupportedInstallMode))
	})

	It("from the bundle as OLM does, in MultiNamespace mode: schedulers in each target namespace, none elsewhere", func() {
		c := newInstallCluster("install-multi")
		const namespace = "scheduler-operator"
		targets := []string{"team-a", "team-b"}
		for _, name := range append([]string{namespace}, targets...) {
			c.createNamespace(name)
		}
		group := olminstall.OperatorGroup{Name: "teams", Namespace: namespace, TargetNamespaces: targets}
		bundle := c.installBundle(filepath.Join(repoRoot, "bundle"), group, nil)
		c.waitOperatorRunning(namespace)

		for _, target := range targets {
			c.expectSchedulerServes(target, "packer-"+target)
		}
		c.expectAuthorityAtAdmission(targets[1], "packer-"+targets[1], true)
		Expect(c.client.Create(ctx, binPacking(namespace, "not-a-target"))).To(Succeed())
		c.kubectl("-n", namespace, "wait", "--for=condition=Degraded", "secondaryscheduler/not-a-target", "--timeout=60s")
		Expect(c.condition(namespace, "not-a-target", "Degraded", "reason")).
			To(Equal(string(v1.ReasonNamespaceNotAllowed)))

		c.expectOperatorConfined(namespace, targets, clusterRulesOf(bundle))
	})

	It("upgrades from the previous release as OLM does: schedulers keep running, restarted only where their rendering changed", func() {
		fixture := filepath.Join(repoRoot, "test", "e2e", "testdata")
		previousBundle := filepath.Join(fixture, "previous-bundle")
		previous, err := olminstall.Read(previousBundle)
		Expect(err).NotTo(HaveOccurred())
		// The previous release runs its own code, built from the commit it was released
		// from: an upgrade test that ran today's binary under yesterday's permissions
		// would test neither.
		c := newInstallCluster("install-upgrade", previous.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Image+"="+
			buildManagerAt(strings.TrimSpace(readFile(filepath.Join(fixture, "previous-bundle.commit")))))
		const namespace = upgradeNamespace
		c.createNamespace(namespace)
		group := olminstall.OperatorGroup{Name: "scheduling", Namespace: namespace, TargetNamespaces: []string{namespace}}
		c.installBundle(previousBundle, group, nil)
		c.waitOperatorRunning(namespace)
		c.expectSchedulerServes(namespace, "packer")
		c.expectSchedulerServes(namespace, "spreader")
		before := c.schedulerRollouts()
		Expect(before).To(HaveLen(2))
		oldLeader := c.leaderOf(namespace)
		Expect(oldLeader).NotTo(BeEmpty())

		current := c.installBundle(filepath.Join(repoRoot, "bundle"), group, previous)
		Expect(current.CSV.Spec.Version).NotTo(Equal(previous.CSV.Spec.Version))
		c.waitOperatorRunning(namespace)
		Eventually(func() string { return c.leaderOf(namespace) }).ShouldNot(Or(BeEmpty(), Equal(oldLeader)), "the new operator leads")
		// A scheduler created after the upgrade runs: the new operator has started.
		c.expectSchedulerServes(namespace, "after-upgrade")
		// That it has reconciled those it found is not shown by what it writes (nothing, if
		// it renders them as before) nor by the order of its queue (those of its first list
		// wait behind a new one): each is given a new generation, changing a field that
		// renders nothing (how long a pod may wait before it is reported), which only the
		// new operator can observe, and kubectl wait awaits a condition of that generation.
		for _, name := range []string{"packer", "spreader"} {
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
			Expect(updateSpec(c.client, cr, func(cr *v1.SecondaryScheduler) {
				cr.Spec.PendingPodThreshold = &metav1.Duration{Duration: 3 * time.Minute}
			})).To(Succeed())
			c.kubectl("-n", namespace, "wait", "--for=condition=Available", "secondaryscheduler/"+name, "--timeout=120s")
		}

		Eventually(func(g Gomega) {
			now := c.schedulerRollouts()
			for name, old := range before {
				g.Expect(now).To(HaveKey(name))
				if now[name].podTemplateHash == old.podTemplateHash {
					g.Expect(now[name].pods).To(Equal(old.pods), "%s renders as before: its pods keep running, without restarts", name)
				} else {
					g.Expect(now[name].pods).NotTo(HaveKey(BeElementOf(slices.Collect(maps.Keys(old.pods)))), "%s renders differently: its pods were replaced", name)
				}
			}
		}).Should(Succeed())
		Consistently(func() map[string]schedulerRollout { return c.schedulerRollouts() }, "5s", "1s").
			Should(Equal(c.schedulerRollouts()), "nothing rolls after the new operator settled")
		c.expectBinds("packer", "packer-after-upgrade")

		// What only the replaced CSV had is gone, as OLM removes it.
		roles := &rbacv1.RoleList{}
		Expect(c.client.List(ctx, roles, client.MatchingLabels{"olm.owner": previous.CSV.Name})).To(Succeed())
		Expect(roles.Items).To(BeEmpty())
		c.expectOperatorConfined(namespace, nil, clusterRulesOf(current))
	})
})
