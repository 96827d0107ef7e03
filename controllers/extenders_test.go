package controllers

import (
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/testpki"
)

// An extender at a URL rolls out in the scheduler's configuration and is probed: while it
// answers, ExtendersAvailable is True; stopped, a non-ignorable extender degrades the
// scheduler, saying every pod it is called for will fail; an ignorable one only warns.
func TestExtenderIsProbedAndDegradesWhenUnreachable(t *testing.T) {
	s := newScenario(t)
	extender := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }))
	cr := binPacking("extended")
	cr.Spec.Extenders = []v1.Extender{{Name: "quota", URL: extender.URL + "/scheduler", FilterVerb: "filter"}}
	s.createRunning(cr)
	reachable := s.expectConditionWithin(cr, v1.ConditionExtendersAvailable, metav1.ConditionTrue, v1.ReasonExtendersReachable, 30*time.Second)
	s.g.Expect(reachable.Message).To(ContainSubstring("every extender answered"))
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("urlPrefix: " + extender.URL + "/scheduler"))
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.Extenders).To(HaveLen(1))
	s.g.Expect(cr.Status.Extenders[0].Reachable).To(BeTrue())
	s.g.Expect(cr.Status.Extenders[0].Message).To(ContainSubstring("/scheduler/filter was answered"))

	extender.Close()
	unreachable := s.expectConditionWithin(cr, v1.ConditionExtendersAvailable, metav1.ConditionFalse, v1.ReasonExtenderUnreachable, 30*time.Second)
	s.g.Expect(unreachable.Message).To(ContainSubstring("every pod the scheduler calls it for fails scheduling"))
	degraded := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonExtenderUnreachable)
	s.g.Expect(degraded.Message).To(ContainSubstring("extender quota is not ignorable"))
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(v1.ReasonExtenderUnreachable)))

	s.update(cr, func() { cr.Spec.Extenders[0].Ignorable = true })
	s.expectConditionWithin(cr, v1.ConditionExtendersAvailable, metav1.ConditionFalse, v1.ReasonIgnorableExtenderUnreachable, 30*time.Second)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	s.update(cr, func() { cr.Spec.Extenders = nil })
	// Once the operator has reported on the spec without extenders, the condition is gone
	// (s.condition would return nil at once, for a condition about the older spec).
	s.g.Eventually(func() bool {
		current := cr.DeepCopy()
		return s.get(current) == nil && current.Status.ObservedGeneration == current.Generation &&
			meta.FindStatusCondition(current.Status.Conditions, string(v1.ConditionExtendersAvailable)) == nil && current.Status.Extenders == nil
	}, 30*time.Second).Should(BeTrue(), "ExtendersAvailable and status.extenders go with the extenders")
	s.g.Expect(s.renderedConfig(cr)).NotTo(ContainSubstring("extenders:"))
}

// The client certificate of an extender comes from a Secret only when the Secret is
// labelled for this SecondaryScheduler; it is mounted into the scheduler from that Secret,
// and its key is in no ConfigMap. A Custom configuration holding a key is refused.
func TestExtenderTLSComesFromLabelledSecrets(t *testing.T) {
	s := newScenario(t)
	authority := testpki.NewAuthority(t)
	certPEM, keyPEM := authority.Issue(t, "scheduler", x509.ExtKeyUsageClientAuth)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "client-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}}
	s.create(secret)
	cr := binPacking("tls-extended")
	cr.Spec.Extenders = []v1.Extender{{Name: "gpu", URL: "https://127.0.0.1:1/x", FilterVerb: "filter", Ignorable: true,
		TLS: &v1.ExtenderTLS{ClientCertificateSecretRef: &corev1.LocalObjectReference{Name: "client-tls"}}}}
	s.create(cr)
	notFound := s.expectConditionWithin(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonExtenderSecretNotFound, 30*time.Second)
	s.g.Expect(notFound.Message).To(ContainSubstring("is not labelled " + v1.LabelExtenderTLSFor + "=tls-extended"))

	// Labelling it is the fix, and the watch of the Secret brings the reconcile.
	s.update(secret, func() { secret.Labels = map[string]string{v1.LabelExtenderTLSFor: cr.Name} })
	s.g.Eventually(podVolumes(s, cr), 30*time.Second).Should(ContainElement(HaveField("Secret.SecretName", "client-tls")))
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("keyFile: /etc/kubernetes/extenders/gpu/client/tls.key"))
	configMaps := &corev1.ConfigMapList{}
	s.g.Expect(adminClient.List(s.ctx, configMaps, client.InNamespace(s.namespace))).To(Succeed())
	for _, configMap := range configMaps.Items {
		for key, value := range configMap.Data {
			s.g.Expect(value).NotTo(ContainSubstring(strings.TrimSpace(string(keyPEM))[40:80]), "ConfigMap %s key %s holds the private key", configMap.Name, key)
		}
	}
	// A new certificate rolls the scheduler: the hash changes without the key in it. The
	// status of the reconcile that mounted the Secret comes after the Deployment: the hash
	// before is the one status and the pod template agree on.
	templateHash := s.deployment(cr).Spec.Template.Annotations[render.ConfigHashAnnotation]
	s.g.Expect(templateHash).NotTo(BeEmpty())
	s.g.Eventually(func() string {
		_ = s.get(cr)
		return cr.Status.ConfigHash
	}, 30*time.Second).Should(Equal(templateHash))
	before := templateHash
	newCert, newKey := authority.Issue(t, "scheduler", x509.ExtKeyUsageClientAuth)
	s.update(secret, func() { secret.Data = map[string][]byte{corev1.TLSCertKey: newCert, corev1.TLSPrivateKeyKey: newKey} })
	s.g.Eventually(func() string {
		_ = s.get(cr)
		return cr.Status.ConfigHash
	}, 30*time.Second).ShouldNot(Equal(before))

	// A CA bundle's ConfigMap is consented to the same way: unlabelled, it is reported as
	// missing; labelled, it is mounted.
	caConfigMap := configMap("extender-ca", map[string]string{"ca.crt": string(authority.PEM)})
	caCR := binPacking("ca-extended")
	caCR.Spec.Extenders = []v1.Extender{{Name: "gpu", URL: "https://127.0.0.1:1/x", FilterVerb: "filter", Ignorable: true,
		TLS: &v1.ExtenderTLS{CABundle: &v1.ExtenderCABundle{ConfigMap: &v1.ConfigMapKeyReference{Name: "extender-ca"}}}}}
	s.create(caConfigMap, caCR)
	unlabelled := s.expectConditionWithin(caCR, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonExtenderSecretNotFound, 30*time.Second)
	s.g.Expect(unlabelled.Message).To(ContainSubstring("ConfigMap " + s.namespace + "/extender-ca, named by spec.extenders[gpu].tls.caBundle.configMap, does not exist or is not labelled " +
		v1.LabelExtenderTLSFor + "=ca-extended"))
	s.update(caConfigMap, func() { caConfigMap.Labels = map[string]string{v1.LabelExtenderTLSFor: caCR.Name} })
	s.g.Eventually(podVolumes(s, caCR), 30*time.Second).Should(ContainElement(HaveField("ConfigMap.Name", "extender-ca")))

	customCR := custom("keyed", "keyed-config")
	s.create(configMap("keyed-config", map[string]string{"config.yaml": goodConfig("keyed", 1) + `extenders:
- urlPrefix: https://placement.example.com
  filterVerb: filter
  tlsConfig:
    certData: ` + "Y2VydA==" + `
    keyData: ` + "a2V5LWJ5dGVzLXRoYXQtbXVzdC1ub3Qtc2hvdw==" + `
`}), customCR)
	refused := s.expectConditionWithin(customCR, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonInvalidExtender, 30*time.Second)
	s.g.Expect(refused.Message).To(ContainSubstring("holds a private key in tlsConfig.keyData"))
	s.g.Expect(refused.Message).NotTo(ContainSubstring("a2V5"))
}

// podVolumes reads the volumes of cr's scheduler pods, none while it has no Deployment.
func podVolumes(s *scenario, cr *v1.SecondaryScheduler) func() []corev1.Volume {
	return func() []corev1.Volume {
		deployment := s.deployment(cr)
		if deployment == nil {
			return nil
		}
		return deployment.Spec.Template.Spec.Volumes
	}
}

// An extender in the scheduler's pod is reached only by that pod's scheduler: it is judged
// by its container in the pod that holds the Lease, whatever another pod's says.
func TestExtenderInThePodIsJudgedInTheLeader(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("extended-in-pod")
	cr.Spec.Extenders = []v1.Extender{{Name: "gpu", FilterVerb: "filter", Container: &v1.ExtenderContainer{Image: "registry.example/extender:1", Port: 9300}}}
	s.create(cr)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).ShouldNot(BeNil())
	template := s.deployment(cr).Spec.Template.DeepCopy()
	// Two pods of the current configuration, as while a HighlyAvailable pair runs or a
	// rollout surges: the leader's extender crashes, the other's is ready.
	withExtender := func(name string, ready bool) {
		s.addReadyPod(cr, name, template)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: name}}
		s.g.Expect(s.get(pod)).To(Succeed())
		extender := corev1.ContainerStatus{Name: render.ExtenderContainerName("gpu"), Ready: ready}
		if !ready {
			extender.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "kube-scheduler", Ready: true}, extender}
		s.g.Expect(adminClient.Status().Update(s.ctx, pod)).To(Succeed())
	}
	leader, other := render.WorkloadName(cr)+"-0", render.WorkloadName(cr)+"-1"
	withExtender(leader, false)
	withExtender(other, true)
	s.markRolledOut(cr)
	s.holdLeaseAs(cr, leader+"_1234")
	notReady := s.expectConditionWithin(cr, v1.ConditionExtendersAvailable, metav1.ConditionFalse, v1.ReasonExtenderNotReady, 30*time.Second)
	s.g.Expect(notReady.Message).To(ContainSubstring("container extender-gpu of pod " + leader + " is not ready (CrashLoopBackOff)"))

	// The other pod takes the Lease: its extender is the one called now.
	s.holdLeaseAs(cr, other+"_5678")
	reachable := s.expectConditionWithin(cr, v1.ConditionExtendersAvailable, metav1.ConditionTrue, v1.ReasonExtendersReachable, 30*time.Second)
	s.g.Expect(reachable.Message).To(ContainSubstring("ready in the leading scheduler pod"))
}
