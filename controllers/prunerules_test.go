package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// Pruning deletes a scheduler's PrometheusRule only when it is provably the scheduler's:
// its owner labels, UID included, the name render gives its rules, and the controller
// reference render gives (the scheduler's in its namespace, none elsewhere). Someone's
// rule carrying the scheduler's labels, UID included, but lacking the rest is left alone.
func TestPruneRecordingRulesDeletesOnlyProvenRules(t *testing.T) {
	s := newScenario(t)
	crd := promtest.OperatorCRD("PrometheusRule", "prometheusrules", "prometheusrule")
	if err := adminClient.Create(s.ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	monitoring, team := "prune-rules-monitoring", "prune-rules-team"
	for _, name := range []string{monitoring, team} {
		s.g.Expect(adminClient.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	}
	// Pruning reads only the scheduler's identity and status, which names the rules it
	// installed: no SecondaryScheduler need exist, and no reconcile runs in between.
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "pruned", UID: uuid.NewUUID()}}
	cr.Status.Metrics = &v1.MetricsStatus{RecordingRules: monitoring + "/" + render.RecordingRuleName(cr)}
	rule := func(namespace, name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
		object := &unstructured.Unstructured{}
		object.SetGroupVersionKind(render.PrometheusRuleGVK)
		object.SetNamespace(namespace)
		object.SetName(name)
		object.SetLabels(render.OwnerLabels(cr))
		object.SetOwnerReferences(owners)
		return object
	}
	theirs := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "RuleSet", Name: "team", UID: uuid.NewUUID(), Controller: ptr.To(true)}
	ours := rule(monitoring, render.RecordingRuleName(cr))
	renamed := rule(monitoring, "team-rules")
	uncontrolled := rule(s.namespace, render.RecordingRuleName(cr)) // in cr's namespace, without cr's controller reference
	controlled := rule(team, render.RecordingRuleName(cr), theirs)
	// Until the API server serves the new kind, creating one may fail.
	s.g.Eventually(func() error { return adminClient.Create(s.ctx, ours) }).Should(Succeed())
	s.create(renamed, uncontrolled, controlled)

	operator, err := client.New(operatorRESTConfig, client.Options{Scheme: testScheme})
	s.g.Expect(err).NotTo(HaveOccurred())
	write := &writer{Client: operator, APIReader: operator}
	s.g.Expect(write.pruneRecordingRules(s.ctx, cr, nil)).To(Succeed())

	s.g.Expect(apierrors.IsNotFound(s.get(ours.DeepCopy()))).To(BeTrue(), "the scheduler's own rules are pruned")
	s.expectUnchanged(renamed, uncontrolled, controlled)
}
