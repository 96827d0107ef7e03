//go:build e2e

package e2e

import (
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/netnshost"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/testpki"
)

// testExtender is test/extender run as a host process, which the scheduler's process and
// the operator both reach on loopback.
type testExtender struct {
	*managedProcess
	address string
}

// startExtender starts test/extender with args on a free port of loopback (or on listen,
// to start it again where it was) and waits until it listens.
func startExtender(name, listen string, args ...string) *testExtender {
	addressFile := filepath.Join(outputDir, name+".address")
	_ = os.Remove(addressFile)
	process := startProcess(name, append([]string{filepath.Join(binDir, "extender"), "--listen=" + listen, "--address-file=" + addressFile}, args...)...)
	var address []byte
	Eventually(func() error {
		var err error
		address, err = os.ReadFile(addressFile)
		return err
	}).Should(Succeed(), "the extender %s listens", name)
	return &testExtender{managedProcess: process, address: string(address)}
}

// down makes the extender close every connection without an answer, as a crashed
// extender behind a live address does; up makes it answer again. Its port stays its own.
func (e *testExtender) down() {
	Expect(syscall.Kill(e.command.Process.Pid, syscall.SIGUSR1)).To(Succeed())
}
func (e *testExtender) up() {
	Expect(syscall.Kill(e.command.Process.Pid, syscall.SIGUSR2)).To(Succeed())
}

// calls is how many requests the extender served, over plain HTTP only.
func (e *testExtender) calls() string {
	response, err := http.Get("http://" + e.address + "/calls")
	if err != nil {
		return ""
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	return strings.TrimSpace(string(body))
}

var _ = Describe("A SecondaryScheduler with an extender", func() {
	It("places pods where a real extender says, degrades while it cannot be reached and is not ignorable, recovers, and places pods without it once ignorable", func() {
		ns := newNamespace()
		extender := startExtender(ns+"-extender", "127.0.0.1:0", "--reject=fake-1,fake-2", "--prefer=fake-4")
		DeferCleanup(func() { extender.stop() })

		cr := binPacking(ns, "extended")
		cr.Spec.Extenders = []v1.Extender{{Name: "placement", URL: "http://" + extender.address + "/scheduler",
			FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 10, NodeCacheCapable: true}}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)
		Eventually(func() string { return condition(cr, v1.ConditionExtendersAvailable) }).Should(Equal("True/" + string(v1.ReasonExtendersReachable)))

		// Without the extender, BinPacking would spread nothing but pick any empty node
		// first; the extender rules two nodes out and prefers fake-4 above all.
		placed := createWorkload(ns, "placed", cr.Name, "100m", 4)
		Expect(expectBound(ns, placed)).To(Equal(map[string]int{"fake-4": 4}))
		Expect(extender.calls()).NotTo(Or(BeEmpty(), Equal("0")), "the scheduler called the extender")

		extender.down()
		Eventually(func() string { return condition(cr, v1.ConditionExtendersAvailable) }).Should(Equal("False/" + string(v1.ReasonExtenderUnreachable)))
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(Equal("True/" + string(v1.ReasonExtenderUnreachable)))
		current := &v1.SecondaryScheduler{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
		Expect(current.Status.Extenders).To(ConsistOf(HaveField("Reachable", false)))
		// The scheduler cannot filter without it: a new pod waits, whatever the time.
		waiting := createWorkload(ns, "waiting", cr.Name, "100m", 2)
		Consistently(func() string { return nodeOf(ns, waiting[0]) }, "5s").Should(BeEmpty(), "a pod is placed without its non-ignorable extender")

		extender.up()
		Expect(expectBound(ns, waiting)).To(Equal(map[string]int{"fake-4": 2}), "the waiting pods are placed once the extender is back")
		Eventually(func() string { return condition(cr, v1.ConditionExtendersAvailable) }).Should(Equal("True/" + string(v1.ReasonExtendersReachable)))
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(Equal("False/" + string(v1.ReasonAsExpected)))

		// Ignorable: the scheduler places pods without the extender while it is down.
		editSpec(current, func(cr *v1.SecondaryScheduler) { cr.Spec.Extenders[0].Ignorable = true })
		Eventually(func() bool {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
			return current.Status.ObservedGeneration == current.Generation && condition(cr, v1.ConditionProgressing) == "False/"+string(v1.ReasonRolloutComplete)
		}).Should(BeTrue(), "the scheduler with an ignorable extender has rolled out")
		waitAvailable(cr)
		extender.down()
		Eventually(func() string { return condition(cr, v1.ConditionExtendersAvailable) }).Should(Equal("False/" + string(v1.ReasonIgnorableExtenderUnreachable)))
		Expect(condition(cr, v1.ConditionDegraded)).To(Equal("False/" + string(v1.ReasonAsExpected)))
		expectBound(ns, createWorkload(ns, "without", cr.Name, "100m", 2))
	})

	It("reaches an extender through a Service, as the scheduler's pod would", func() {
		if os.Geteuid() != 0 {
			Fail("this spec gives the extender an address an EndpointSlice may name, on a test host's link, which needs root")
		}
		ns := newNamespace()
		// The root namespace's side of a test host's link: an address that is neither
		// loopback nor link-local, as an EndpointSlice requires, reachable from this host.
		host, err := netnshost.New("ssop-e2e-ext", 78)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(host.Close)
		extender := startExtender(ns+"-extender", net.JoinHostPort(host.HostAddress, "0"), "--reject=fake-1,fake-2,fake-4", "--prefer=fake-3")
		DeferCleanup(func() { extender.stop() })
		exposeAsService(ns, "placement", 8080, extender.address)

		cr := binPacking(ns, "service-extended")
		cr.Spec.Extenders = []v1.Extender{{Name: "placement", Service: &v1.ExtenderService{Name: "placement", Port: 8080, PathPrefix: "/scheduler"},
			FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 1}}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)
		Eventually(func() string { return condition(cr, v1.ConditionExtendersAvailable) }).Should(Equal("True/" + string(v1.ReasonExtendersReachable)))
		current := &v1.SecondaryScheduler{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
		Expect(current.Status.Extenders).To(ConsistOf(HaveField("Address", "http://placement."+ns+".svc:8080/scheduler")))
		Expect(expectBound(ns, createWorkload(ns, "through-service", cr.Name, "100m", 2))).To(Equal(map[string]int{"fake-3": 2}))
	})

	It("reaches an HTTPS extender with a CA and a client certificate from labelled Secrets, and no key lands in a ConfigMap", func() {
		ns := newNamespace()
		serverCA, clientCA := testpki.NewAuthority(GinkgoT()), testpki.NewAuthority(GinkgoT())
		dir := filepath.Join(outputDir, ns+"-extender-tls")
		Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
		serverCert, serverKey := serverCA.Issue(GinkgoT(), "extender", x509.ExtKeyUsageServerAuth)
		clientCert, clientKey := clientCA.Issue(GinkgoT(), "scheduler", x509.ExtKeyUsageClientAuth)
		for name, content := range map[string][]byte{"tls.crt": serverCert, "tls.key": serverKey, "client-ca.crt": clientCA.PEM} {
			Expect(os.WriteFile(filepath.Join(dir, name), content, 0o600)).To(Succeed())
		}
		extender := startExtender(ns+"-extender", "127.0.0.1:0", "--reject=fake-1,fake-2,fake-3",
			"--tls-cert="+filepath.Join(dir, "tls.crt"), "--tls-key="+filepath.Join(dir, "tls.key"), "--client-ca="+filepath.Join(dir, "client-ca.crt"))
		DeferCleanup(func() { extender.stop() })

		const name = "tls-extended"
		labelled := map[string]string{v1.LabelExtenderTLSFor: name}
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extender-ca", Labels: labelled},
			Data: map[string][]byte{"ca.crt": serverCA.PEM}})).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scheduler-client-tls", Labels: labelled},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: clientCert, corev1.TLSPrivateKeyKey: clientKey}})).To(Succeed())
		cr := binPacking(ns, name)
		cr.Spec.Extenders = []v1.Extender{{Name: "secure", URL: "https://" + extender.address, FilterVerb: "filter",
			TLS: &v1.ExtenderTLS{ServerName: "extender",
				CABundle:                   &v1.ExtenderCABundle{Secret: &v1.SecretKeyReference{Name: "extender-ca", Key: "ca.crt"}},
				ClientCertificateSecretRef: &corev1.LocalObjectReference{Name: "scheduler-client-tls"}}}}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)
		Eventually(func() string { return condition(cr, v1.ConditionExtendersAvailable) }).Should(Equal("True/" + string(v1.ReasonExtendersReachable)))
		Expect(expectBound(ns, createWorkload(ns, "secure", cr.Name, "100m", 3))).To(Equal(map[string]int{"fake-4": 3}))

		configMaps := &corev1.ConfigMapList{}
		Expect(k8s.List(ctx, configMaps, client.InNamespace(ns))).To(Succeed())
		keyBody := strings.Split(strings.TrimSpace(string(clientKey)), "\n")[1]
		for _, configMap := range configMaps.Items {
			for key, value := range configMap.Data {
				Expect(value).NotTo(ContainSubstring(keyBody), "ConfigMap %s key %s holds the client key", configMap.Name, key)
			}
		}
	})
})
