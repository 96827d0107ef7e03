package controllers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// A finalizer patch written from a stale read is refused by the API server, so a
// finalizer another controller added meanwhile is never dropped; from a fresh read it
// changes only the operator's finalizer. Checked on a ConfigMap, which the operator does
// not reconcile, so that nothing but the test writes it.
func TestFinalizerPatchesKeepOthersFinalizers(t *testing.T) {
	s := newScenario(t)
	const ours, theirs, later = "example.com/ours", "example.com/theirs", "example.com/later"
	object := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "finalized"}}
	s.create(object)
	t.Cleanup(func() {
		_ = s.get(object)
		object.Finalizers = nil
		_ = adminClient.Update(s.ctx, object)
	})
	finalizers := func() []string {
		current := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: object.Namespace, Name: object.Name}}
		s.g.Expect(s.get(current)).To(Succeed())
		return current.Finalizers
	}

	stale := object.DeepCopy()
	s.update(object, func() { object.Finalizers = append(object.Finalizers, theirs) })
	err := addFinalizer(s.ctx, adminClient, stale, ours)
	s.g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a patch from a stale read: %v", err)
	s.g.Expect(finalizers()).To(Equal([]string{theirs}))
	s.g.Expect(s.get(object)).To(Succeed())
	s.g.Expect(addFinalizer(s.ctx, adminClient, object, ours)).To(Succeed())
	s.g.Expect(finalizers()).To(Equal([]string{theirs, ours}))

	stale = object.DeepCopy()
	s.update(object, func() { object.Finalizers = append(object.Finalizers, later) })
	err = removeFinalizer(s.ctx, adminClient, stale, ours)
	s.g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a patch from a stale read: %v", err)
	s.g.Expect(finalizers()).To(Equal([]string{theirs, ours, later}))
	s.g.Expect(s.get(object)).To(Succeed())
	s.g.Expect(removeFinalizer(s.ctx, adminClient, object, ours)).To(Succeed())
	s.g.Expect(finalizers()).To(Equal([]string{theirs, later}))
}

// Only a conflict on a SecondaryScheduler is taken for a resource changed since it was
// read, and requeued without an error.
func TestRequeueOnConflict(t *testing.T) {
	ours := schema.GroupResource{Group: v1.GroupVersion.Group, Resource: "secondaryschedulers"}
	tests := []struct {
		name        string
		err         error
		wantRequeue bool
	}{
		{"conflict on the SecondaryScheduler", apierrors.NewConflict(ours, "packer", fmt.Errorf("the object has been modified")), true},
		{"wrapped", fmt.Errorf("remove finalizer: %w", apierrors.NewConflict(ours, "packer", fmt.Errorf("modified"))), true},
		{"conflict on another kind", apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "token", fmt.Errorf("modified")), false},
		{"not found", apierrors.NewNotFound(ours, "packer"), false},
		{"other error", fmt.Errorf("connection refused"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result, err := requeueOnConflict(tt.err)
			if requeued := err == nil && result.RequeueAfter > 0; requeued != tt.wantRequeue {
				t.Errorf("requeueOnConflict(%v) = %+v, %v; want requeue %v", tt.err, result, err, tt.wantRequeue)
			}
			if !tt.wantRequeue && !errors.Is(err, tt.err) {
				t.Errorf("the error is not returned as it is: %v", err)
			}
		})
	}
}

// TestAuthorityPolicyGuardsTheFinalizer: the admission policy names the operator's
// finalizer, whose removal it lets only those who may run schedulers make.
func TestAuthorityPolicyGuardsTheFinalizer(t *testing.T) {
	policies, err := render.AuthorityAdmission(operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range policies {
		if policy.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		conditions, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
		if !strings.Contains(fmt.Sprint(conditions), "'"+Finalizer+"' in oldObject.metadata") {
			t.Errorf("the authority policy's match conditions do not name the finalizer %s: %v", Finalizer, conditions)
		}
		return
	}
	t.Fatal("no ValidatingAdmissionPolicy rendered")
}

// A new scheduler's objects that its owner reference brings down with it are written
// beside the finalizer patch, not after it; those only the finalizer deletes (the
// ClusterRoleBindings, the metrics token's among them, and the RoleBinding in
// kube-system) are sent only once the patch is answered: were the SecondaryScheduler
// deleted before its finalizer is there, nothing would delete them. The patch is held back
// until the first objects are created, which a reconcile that waited for it first would
// never do.
func TestOnlyWhatTheFinalizerDeletesWaitsForIt(t *testing.T) {
	for _, test := range []struct {
		name string
		cr   *v1.SecondaryScheduler
		// createdBeside are kinds of the objects of cr's namespace created while the
		// patch is held, and outside how many objects only the finalizer deletes.
		createdBeside []string
		outside       int
	}{
		{"bin packing", binPacking("finalizer-beside"), []string{"serviceaccounts", "configmaps", "roles"}, 3},
		// The metrics ServiceAccount comes before its ClusterRoleBinding, and the token
		// after both: the credentials step writes them before the others.
		{"metrics token", &v1.SecondaryScheduler{
			ObjectMeta: metav1.ObjectMeta{Name: "finalizer-token"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				Metrics: &v1.LoadMetrics{Address: "https://prometheus.invalid:9091", ServiceAccountToken: &v1.ServiceAccountTokenAuth{}}}},
		}, []string{"serviceaccounts"}, 4},
	} {
		t.Run(test.name, func(t *testing.T) {
			s := newScenario(t)
			cr := test.cr
			release := make(chan struct{})
			operatorRequests.hold(t, "patch", "secondaryschedulers", s.namespace, cr.Name, release)
			mark := operatorRequests.mark()
			s.create(cr)
			createdInNamespace := func() []string {
				var created []string
				for _, seen := range operatorRequests.since(mark) {
					if seen.verb == "create" && seen.namespace == s.namespace && seen.status == http.StatusCreated {
						created = append(created, seen.resource)
					}
				}
				return created
			}
			s.g.Eventually(createdInNamespace).Should(ContainElements(test.createdBeside),
				"objects of the scheduler's namespace are created while the finalizer patch is held")
			s.g.Expect(s.clusterScopedChildren(cr)).To(BeEmpty(), "nothing only the finalizer deletes exists before it is there")
			close(release)

			s.g.Eventually(func() []string { return s.clusterScopedChildren(cr) }).Should(HaveLen(test.outside))
			// The counter records a request once its answer has come back to the operator,
			// which may be a moment after the API server shows the object: read until the
			// last create is recorded.
			s.g.Eventually(func(g Gomega) {
				var finalizerAnswered int64
				var outside []operatorRequest
				for _, seen := range operatorRequests.since(mark) {
					switch {
					case seen.verb == "patch" && seen.resource == "secondaryschedulers" && seen.name == cr.Name && seen.namespace == s.namespace:
						g.Expect(seen.status).To(Equal(http.StatusOK), "the finalizer patch")
						finalizerAnswered = seen.answeredAt
					case seen.verb == "create" && seen.namespace != s.namespace && strings.Contains(seen.name, s.namespace):
						outside = append(outside, seen)
					}
				}
				g.Expect(finalizerAnswered).NotTo(BeZero(), "the finalizer was patched")
				g.Expect(outside).To(HaveLen(test.outside), "each object only the finalizer deletes was created once")
				for _, seen := range outside {
					g.Expect(seen.sentAt).To(BeNumerically(">", finalizerAnswered), "%s %s was sent before the finalizer was there", seen.resource, seen.name)
				}
			}).Should(Succeed())
			s.g.Expect(s.current(cr).Finalizers).To(ContainElement(Finalizer))
		})
	}
}
