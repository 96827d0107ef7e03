package controllers

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// The real descheduler (make descheduler builds it beside the control plane) accepts the
// policy the operator renders, under the ServiceAccount and the permissions the operator
// gives it: it loads the policy before it runs for the Lease the operator made, and exits
// when it cannot load it, so holding that Lease proves both.
func TestRealDeschedulerTakesTheRenderedPolicy(t *testing.T) {
	binary := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "descheduler")
	if _, err := os.Stat(binary); err != nil {
		t.Skipf("no descheduler beside the control plane (%v): build it with make descheduler", err)
	}
	s := newScenario(t)
	installDeschedulerRoles(t, s)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "with-descheduler"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile,
			Metrics: &v1.LoadMetrics{Address: "http://127.0.0.1:1"}}, Descheduling: &v1.Descheduling{}},
	}
	s.create(cr)
	policy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerName(cr)}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerLeaseName(cr)}}
	s.g.Eventually(func() error { return s.get(policy) }).Should(Succeed())
	s.g.Eventually(func() error { return s.get(lease) }).Should(Succeed())

	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	s.g.Expect(os.WriteFile(policyFile, []byte(policy.Data["policy.yaml"]), 0o600)).To(Succeed())
	kubeconfig := filepath.Join(dir, "kubeconfig")
	s.g.Expect(os.WriteFile(kubeconfig, impersonating(t, "system:serviceaccount:"+s.namespace+":"+render.DeschedulerName(cr), s.namespace), 0o600)).To(Succeed())
	var log bytes.Buffer
	address, port := freeLoopbackAddress(t)
	descheduler := exec.CommandContext(s.ctx, binary, "--policy-config-file="+policyFile, "--kubeconfig="+kubeconfig,
		"--leader-elect=true", "--leader-elect-resource-name="+lease.Name, "--leader-elect-resource-namespace="+lease.Namespace,
		"--descheduling-interval=15m", "--bind-address="+address, "--secure-port="+strconv.Itoa(port))
	descheduler.Stdout, descheduler.Stderr = &log, &log
	s.g.Expect(descheduler.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- descheduler.Wait() }()
	t.Cleanup(func() {
		_ = descheduler.Process.Kill()
		if err := <-exited; err == nil {
			t.Log("the descheduler ended by itself before it was killed")
		}
	})
	s.g.Eventually(func() string {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the descheduler exited (%v): %s", err, lastLines(log.String(), 20))
		default:
		}
		s.g.Expect(s.get(lease)).To(Succeed())
		if lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}, 2*time.Minute).ShouldNot(BeEmpty(), "the descheduler holds the Lease the operator made for it")

	// The operator reads the cycles of the running descheduler from its metrics, as the pod of its Deployment that serves them.
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerName(cr)}}
	s.g.Expect(s.get(deployment)).To(Succeed())
	template := deployment.Spec.Template.DeepCopy()
	for i := range template.Spec.Containers {
		for j := range template.Spec.Containers[i].Ports {
			template.Spec.Containers[i].Ports[j].ContainerPort = int32(port)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerName(cr) + "-0", Labels: template.Labels,
		Annotations: template.Annotations},
		Spec: template.Spec}
	s.g.Expect(adminClient.Create(s.ctx, pod)).To(Succeed())
	// Running, but without an address yet: status says its metrics could not be read, and
	// why, instead of showing no cycles without a word.
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	s.g.Expect(adminClient.Status().Update(s.ctx, pod)).To(Succeed())
	s.g.Eventually(func() string {
		s.g.Expect(s.get(cr)).To(Succeed())
		if cr.Status.Descheduling == nil {
			return ""
		}
		return cr.Status.Descheduling.Unread
	}, 2*time.Minute).Should(ContainSubstring("the metrics of pod " + pod.Name + ": it runs but has no IP address to read them at"))
	pod.Status.PodIP, pod.Status.PodIPs = address, []corev1.PodIP{{IP: address}}
	s.g.Expect(adminClient.Status().Update(s.ctx, pod)).To(Succeed())
	// The descheduler's first cycle runs once it leads: fewer than two nodes skip it, and
	// it counts all the same.
	s.g.Eventually(func() *v1.DeschedulingStatus {
		s.g.Expect(s.get(cr)).To(Succeed())
		return cr.Status.Descheduling
	}, 2*time.Minute).Should(And(Not(BeNil()), HaveField("CyclesLastHour", BeNumerically(">=", 1)), HaveField("LastCycleSeen", Not(BeNil())),
		HaveField("EvictionsLastHour", BeZero()), HaveField("Unread", ContainSubstring("querying http://127.0.0.1:1 for the nodes' use failed"))),
		"status.descheduling counts the cycle, and says the operator could not read the nodes' use from the address given")
	s.g.Expect(cr.Status.Descheduling.Unread).NotTo(ContainSubstring("the metrics of pod"), "the descheduler's metrics were read")
}

// installDeschedulerRoles creates the descheduler's ClusterRoles as the installer ships
// them (config/rbac/descheduler_roles.yaml).
func installDeschedulerRoles(t *testing.T, s *scenario) {
	t.Helper()
	documents, err := manifests.Documents(filepath.Join("..", "config", "rbac", "descheduler_roles.yaml"))
	s.g.Expect(err).NotTo(HaveOccurred())
	for _, document := range documents {
		role := &rbacv1.ClusterRole{}
		s.g.Expect(yaml.Unmarshal(document, role)).To(Succeed())
		if err := adminClient.Create(s.ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// impersonating is a kubeconfig of an administrator of the test's API server that acts as
// serviceAccount (of namespace), so that a process run with it has exactly its permissions.
func impersonating(t *testing.T, serviceAccount, namespace string) []byte {
	t.Helper()
	user, err := testEnv.AddUser(envtest.User{Name: "impersonator", Groups: []string{"system:masters"}}, adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range config.AuthInfos {
		auth.Impersonate = serviceAccount
		auth.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	out, err := clientcmd.Write(*config)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lastLines is the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
