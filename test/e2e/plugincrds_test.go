//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// A configuration enabling a plugin whose CRD the cluster does not serve is refused before
// rollout, with the command that installs it, and nothing rolls out: SySched reads the
// Security Profiles Operator's SeccompProfiles, whose CRD no spec installs. Needs no
// scheduler-plugins binary: the refusal comes first.
var _ = Describe("Plugin CRDs", func() {
	It("refuses a configuration whose plugin reads a kind the cluster does not serve, and rolls out nothing", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sysched-config"},
			Data: map[string]string{"config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" +
				"profiles:\n- schedulerName: sysched\n  plugins:\n    score:\n      enabled:\n      - name: SySched\n"}})).To(Succeed())
		cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sysched"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.CustomProfile}, SchedulerConfig: "sysched-config"}}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }, "1m").Should(Equal("True/" + string(v1.ReasonPluginCRDMissing)))
		degraded := conditionOf(cr, v1.ConditionDegraded)
		Expect(degraded.Message).To(And(ContainSubstring("SySched reads SeccompProfile"),
			ContainSubstring("seccompprofiles.security-profiles-operator.x-k8s.io"),
			ContainSubstring("raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/"+schedconfig.SchedulerPluginsCommit+"/manifests/sysched/crd.yaml")))
		Consistently(func() bool {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.WorkloadName(cr)}, &appsv1.Deployment{})
			return apierrors.IsNotFound(err)
		}, 5*time.Second, time.Second).Should(BeTrue(), "no scheduler Deployment is created")
	})
})

// conditionOf is cr's condition of conditionType as the API server has it now, nil when
// it has none.
func conditionOf(cr *v1.SecondaryScheduler, conditionType v1.ConditionType) *metav1.Condition {
	current := &v1.SecondaryScheduler{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
	for i := range current.Status.Conditions {
		if current.Status.Conditions[i].Type == string(conditionType) {
			return &current.Status.Conditions[i]
		}
	}
	return nil
}
