//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// A real scheduler-plugins build, configured by spec.quota beside BinPacking, holds a
// namespace to its ElasticQuota: beyond its min it borrows what another namespace leaves
// of its own, and never goes beyond its max; the real controller of the same build, which
// the operator runs meanwhile, tells the quota's use, and status names the quota that
// holds a pod.
var _ = Describe("Elastic quotas with a scheduler-plugins build", func() {
	It("lets a namespace borrow unused quota up to its max, and refuses a pod beyond it", func() {
		requireSchedulerPlugins("CapacityScheduling")
		if schedulerPluginsController() == "" {
			Skip("no scheduler-plugins controller beside " + os.Getenv("SCHEDULER_PLUGINS_BINARY") + ": rebuild it with make scheduler-plugins, which builds both")
		}
		// The controller keeps PodGroups too, and does not start without their CRD.
		installPluginCRD(os.Getenv("SCHEDULER_PLUGINS_BINARY"), "Coscheduling")
		const pool = "quota"
		createScoringNode(scoringNode{name: "quota-1", cpuMillis: 1000}, pool)
		createScoringNode(scoringNode{name: "quota-2", cpuMillis: 1000}, pool)
		// The scheduler runs in a namespace of its own, as a platform team's would: its pod
		// would count against a quota of the namespace it runs in.
		platform, team, lender := newNamespace(), newNamespace(), newNamespace()
		teamQuota := elasticQuota(team, "500m", "1500m")
		elasticQuota(lender, "1500m", "2") // leaves its min unused
		cr := binPacking(platform, "quotas")
		cr.Spec.Quota = &v1.Quota{}
		cr.Spec.PendingPodThreshold = &metav1.Duration{Duration: 10 * time.Second}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)

		By("three pods of 500m in a namespace whose min is 500m: two borrow the lender's unused min")
		names := make([]string, 0, 3)
		for i := range 3 {
			pod := scoringPod(team, cr.Name, pool, 500)
			pod.Name = fmt.Sprintf("%s-%d", pod.Name, i)
			Expect(k8s.Create(ctx, pod)).To(Succeed())
			names = append(names, pod.Name)
		}
		expectBound(team, names)
		expectScheduledBy(team, names, cr.Name)
		Eventually(func() string {
			used, _, _ := unstructured.NestedString(currentObject(teamQuota).Object, "status", "used", "cpu")
			return used
		}, "1m").Should(Equal("1500m"), "scheduler-plugins' controller tells the team's quota used by its three running pods")

		By("a fourth: 2 CPUs in all, beyond the namespace's max of 1500m, though a node has room")
		beyond := scoringPod(team, cr.Name, pool, 500)
		beyond.Name += "-beyond-max"
		Expect(k8s.Create(ctx, beyond)).To(Succeed())
		Eventually(func() []string { return eventReasonsOf(team, beyond.Name) }, "2m").Should(ContainElement("FailedScheduling"),
			"the scheduler tried pod %s and refused it", beyond.Name)
		Expect(nodeOf(team, beyond.Name)).To(BeEmpty(), "a pod beyond its namespace's max is not bound")

		By("status names the quota that holds it, with its figures")
		Eventually(func() string {
			pending := meta.FindStatusCondition(secondarySchedulerNow(cr).Status.Conditions, string(v1.ConditionPodsPending))
			if pending == nil || pending.Reason != string(v1.ReasonQuotaExceeded) {
				return ""
			}
			return pending.Message
		}, "1m").Should(And(ContainSubstring("holds the oldest, "+team+"/"+beyond.Name),
			ContainSubstring("ElasticQuota "+team+"/quota uses 1500m of its max of 1500m cpu; the pod requests 500m more")),
			"PodsPending is QuotaExceeded and gives the quota's use, its max and the pod's request")
	})
})

// elasticQuota gives namespace an ElasticQuota of CPU min and max, and of 4Gi of memory:
// CapacityScheduling takes a resource its min or max leaves out as a bound of zero.
func elasticQuota(namespace, minCPU, maxCPU string) *unstructured.Unstructured {
	quota := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
		"metadata": map[string]any{"namespace": namespace, "name": "quota"},
		"spec": map[string]any{
			"min": map[string]any{"cpu": minCPU, "memory": "4Gi"},
			"max": map[string]any{"cpu": maxCPU, "memory": "4Gi"},
		},
	}}
	Expect(k8s.Create(ctx, quota)).To(Succeed())
	return quota
}
