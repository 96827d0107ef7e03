//go:build e2e

package e2e

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// handoverBudget is how long a pod may wait for its scheduler across a rollout: the old
// replica releases the Lease when it stops and the new one asks for it every 2 s; a
// replica killed before it could release it holds it for its lease duration, 15 s. A pod
// stranded at a handover waits for minutes (kube-scheduler retries a pod it has given up
// on after 5 minutes), so the budget tells the two apart with a wide margin.
const handoverBudget = 45 * time.Second

// Each configuration change rolls a new scheduler pod out: it starts, waits for the Lease
// while the old one goes on scheduling, and takes over when the old one stops. Pods keep
// arriving all along, so some are being scheduled, or bound, at each handover. The
// configurations alternate, so that each rollout returns to a template the Deployment
// had: a new pod that never led would go unnoticed but for Available.
var _ = Describe("A configuration rollout", func() {
	It("strands no pod: pods created through three rollouts are all bound promptly, by the scheduler they name", func() {
		ns := newNamespace()
		config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rolling"},
			Data: map[string]string{"config.yaml": resourcesFitConfig("rolling", "MostAllocated")}}
		cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rolling"},
			Spec: v1.SecondarySchedulerSpec{SchedulerConfig: "rolling"}}
		Expect(k8s.Create(ctx, config)).To(Succeed())
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)

		arrivals := startArrivals(ns, "arrival", "rolling", 200*time.Millisecond)
		for _, strategy := range []string{"LeastAllocated", "MostAllocated", "LeastAllocated"} {
			By("rolling out " + strategy + " while pods arrive")
			before := configHash(cr)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(config), config)).To(Succeed())
			config.Data["config.yaml"] = resourcesFitConfig("rolling", strategy)
			Expect(k8s.Update(ctx, config)).To(Succeed())
			Eventually(func() string { return configHash(cr) }).ShouldNot(Equal(before))
			// In effect once a pod of the new configuration leads, which is when pods are
			// placed as it says: the old pod has stopped and handed the Lease over.
			waitInEffect(cr)
			Expect(leaderPod(cr).Annotations).To(HaveKeyWithValue(render.ConfigHashAnnotation, configHash(cr)), "the new configuration's pod leads")
		}
		names := arrivals.stop()
		Expect(len(names)).To(BeNumerically(">=", 20), "pods arrived through the rollouts")

		slowest := time.Duration(0)
		for _, name := range names {
			Eventually(func() string { return nodeOf(ns, name) }, handoverBudget).ShouldNot(BeEmpty(), "pod %s/%s is bound", ns, name)
			waited := schedulingDelay(ns, name)
			Expect(waited).To(BeNumerically("<", handoverBudget), "pod %s/%s waited %v for a node", ns, name, waited)
			slowest = max(slowest, waited)
		}
		GinkgoWriter.Printf("%d pods through 3 rollouts; the slowest was bound %v after its creation\n", len(names), slowest)
		// Bound at the request of the scheduler's own ServiceAccount: the API server's record.
		// (The Scheduled event does not tell: a replica stopped while a binding it sent is
		// in flight logs a failure, and sends no event, for a binding the API server made.)
		binder := serviceAccountUser(ns, render.WorkloadName(cr))
		Eventually(func() []string {
			requests := bindingRequestsBy(ns, binder)
			var unasked []string
			for _, name := range names {
				if requests[name] == 0 {
					unasked = append(unasked, name)
				}
			}
			return unasked
		}).Should(BeEmpty(), "pods bound with no binding request of %s", binder)
	})
})

// configHash is the configuration the operator last rendered for cr.
func configHash(cr *v1.SecondaryScheduler) string {
	current := &v1.SecondaryScheduler{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cr), current); err != nil {
		return ""
	}
	return current.Status.ConfigHash
}

// schedulingDelay is how long a bound pod waited for its node: the API server sets the
// PodScheduled condition when it accepts the binding.
func schedulingDelay(namespace, name string) time.Duration {
	pod := &corev1.Pod{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod)).To(Succeed())
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionTrue {
			return condition.LastTransitionTime.Sub(pod.CreationTimestamp.Time)
		}
	}
	Fail(fmt.Sprintf("pod %s/%s is bound but has no PodScheduled condition", namespace, name))
	return 0
}

// arrivals creates a workload pod for a scheduler every interval, until stopped.
type arrivals struct {
	done  chan struct{}
	wg    sync.WaitGroup
	names []string
	err   error
}

func startArrivals(namespace, prefix, schedulerName string, interval time.Duration) *arrivals {
	a := &arrivals{done: make(chan struct{})}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for i := 0; ; i++ {
			pod := workload(namespace, fmt.Sprintf("%s-%d", prefix, i), schedulerName, "10m", "registry.example/app:1")
			if err := k8s.Create(ctx, pod); err != nil {
				a.err = fmt.Errorf("create pod %s: %w", pod.Name, err)
				return
			}
			a.names = append(a.names, pod.Name)
			select {
			case <-a.done:
				return
			case <-ticker.C:
			}
		}
	}()
	return a
}

// stop ends the arrivals and returns the names of the pods created.
func (a *arrivals) stop() []string {
	close(a.done)
	a.wg.Wait()
	Expect(a.err).NotTo(HaveOccurred())
	return a.names
}
