package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// A status an earlier version of the operator wrote with Update (its fields owned by an
// Update manager, which server-side apply never removes) is taken over at the next
// write: fields the operator no longer sets go away, and no Update manager of status is
// left.
func TestStatusWrittenWithUpdateIsTakenOver(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("legacy-status")
	s.createRunning(cr)

	// As an earlier version wrote status: Update, with metrics a BinPacking scheduler
	// does not have.
	s.g.Eventually(func() error {
		if err := s.get(cr); err != nil {
			return err
		}
		cr.Status.Metrics = &v1.MetricsStatus{Address: "http://legacy.example:9090", Scoring: v1.ScoringLoadAware}
		meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{Type: string(v1.ConditionMetricsAvailable),
			Status: metav1.ConditionTrue, Reason: string(v1.ReasonMetricsAvailable), Message: "written by an earlier version",
			ObservedGeneration: cr.Generation})
		return adminClient.Status().Update(s.ctx, cr, client.FieldOwner("manager"))
	}).Should(Succeed())

	// A change of spec brings a reconcile, whose status has neither.
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	s.g.Eventually(func(g Gomega) {
		g.Expect(s.get(cr)).To(Succeed())
		g.Expect(cr.Status.ObservedGeneration).To(Equal(cr.Generation))
		g.Expect(cr.Status.Metrics).To(BeNil(), "status.metrics that only the earlier version set")
		g.Expect(meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionMetricsAvailable))).To(BeNil())
	}).Should(Succeed())
	for _, entry := range cr.ManagedFields {
		if entry.Subresource == "status" {
			s.g.Expect(entry.Operation).To(Equal(metav1.ManagedFieldsOperationApply), "manager %s", entry.Manager)
			s.g.Expect(entry.Manager).To(Equal(FieldOwner))
		}
	}
}
