package controllers

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/hostprocess"
)

// TestRenderedSchedulerSchedulesUnderItsOwnIdentity runs the real kube-scheduler with
// the configuration the operator rendered, authenticated as the ServiceAccount the
// operator created, so that the rendered bindings are exactly what it has: it must
// acquire its own Lease (and leave the default scheduler's alone) and bind a pod.
func TestRenderedSchedulerSchedulesUnderItsOwnIdentity(t *testing.T) {
	binary := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-scheduler")
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("kube-scheduler is missing from KUBEBUILDER_ASSETS (%v); `make test-integration` builds it", err)
	}
	s := newScenario(t)
	cr := binPacking("real")
	s.create(cr)
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).ShouldNot(BeEmpty())

	dir := t.TempDir()
	kubeconfig := s.serviceAccountKubeconfig(dir, render.WorkloadName(cr))
	configPath := filepath.Join(dir, "config.yaml")
	schedulerConfig, err := hostprocess.PointAtKubeconfig([]byte(s.renderedConfig(cr)), kubeconfig)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(os.WriteFile(configPath, schedulerConfig, 0o600)).To(Succeed())

	address, port := freeLoopbackAddress(t)
	logPath := filepath.Join(dir, "kube-scheduler.log")
	logFile, err := os.Create(logPath)
	s.g.Expect(err).NotTo(HaveOccurred())
	scheduler := exec.Command(binary, "--config="+configPath, "--bind-address="+address, "--secure-port="+strconv.Itoa(port),
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig, "--v=2")
	scheduler.Stdout, scheduler.Stderr = logFile, logFile
	s.g.Expect(scheduler.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = scheduler.Process.Kill()
		_, _ = scheduler.Process.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("kube-scheduler log:\n%s", data)
		}
	})

	// Ready on its HTTPS health endpoint, as the Deployment's probe would see it.
	insecure := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed serving cert
	s.g.Eventually(func() int {
		response, err := insecure.Get(fmt.Sprintf("https://%s/readyz", net.JoinHostPort(address, strconv.Itoa(port))))
		if err != nil {
			return 0
		}
		_ = response.Body.Close()
		return response.StatusCode
	}, time.Minute).Should(Equal(http.StatusOK))

	// It leads with the Lease the operator made for it, in its own namespace, which its
	// Role lets it renew but not create.
	s.g.Eventually(func() string {
		lease, err := adminClientset.CoordinationV1().Leases(s.namespace).Get(s.ctx, render.LeaseName(cr), metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}, time.Minute).ShouldNot(BeEmpty())
	_, err = adminClientset.CoordinationV1().Leases("kube-system").Get(s.ctx, "kube-scheduler", metav1.GetOptions{})
	s.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the default scheduler's Lease must never be touched, got %v", err)

	// It binds a pod that asks for it, and reports it as itself.
	node := s.createNode("node-" + s.namespace)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "workload", Namespace: s.namespace},
		Spec: corev1.PodSpec{
			SchedulerName: "real",
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}},
		},
	}
	s.create(pod)
	s.g.Eventually(func() string { _ = s.get(pod); return pod.Spec.NodeName }, time.Minute).Should(Equal(node.Name))
	s.g.Eventually(func() []string {
		events, err := adminClientset.EventsV1().Events(s.namespace).List(s.ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		var reporters []string
		for _, event := range events.Items {
			if event.Regarding.Name == pod.Name && event.Reason == "Scheduled" {
				reporters = append(reporters, event.ReportingController)
			}
		}
		return reporters
	}).Should(ContainElement("real"))
}

// serviceAccountKubeconfig writes a kubeconfig holding a bound token of a ServiceAccount.
func (s *scenario) serviceAccountKubeconfig(dir, serviceAccount string) string {
	s.t.Helper()
	token, err := adminClientset.CoreV1().ServiceAccounts(s.namespace).CreateToken(s.ctx, serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	s.g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	s.g.Expect(hostprocess.WriteKubeconfig(path, adminConfig.Host, adminConfig.CAData, "", token.Status.Token)).To(Succeed())
	return path
}

// freeLoopbackAddress is an address of the loopback network other than 127.0.0.1, drawn at
// random, and a port free on it, for a process the test starts to serve on. The port is
// free only until the listener that found it closes; on an address of its own, the
// ports that other processes bind on 127.0.0.1 meanwhile (their listeners and outgoing
// connections, the likeliest) cannot take it, only a listener on every address could.
func freeLoopbackAddress(t *testing.T) (string, int) {
	t.Helper()
	address := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
	listener, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listener.Close() }()
	return address, listener.Addr().(*net.TCPAddr).Port
}
