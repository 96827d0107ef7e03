package outcome

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// workloadLabel marks the benchmark's pods, which its informer watches.
const workloadLabel = "outcome.bench.secondary-scheduler.io/workload"

// podLabel names the pod of the workload a pod object runs: the object's own name for a
// bare pod, its ReplicaSet's for one of a ReplicaSet.
const podLabel = "outcome.bench.secondary-scheduler.io/pod"

// workloadPodName is the name of the pod of the workload that pod runs.
func workloadPodName(pod *corev1.Pod) string {
	if name := pod.Labels[podLabel]; name != "" {
		return name
	}
	return pod.Name
}

// kwokNode is the annotation and taint of the nodes kwok keeps Ready and whose pods it
// marks Running (hack/kwokctl-config.yaml); the taint keeps every other pod off them.
const kwokNode = "kwok.x-k8s.io/node"

// nodeNames are the names of arm's n nodes.
func nodeNames(arm Arm, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-node-%02d", arm.Key, i+1)
	}
	return names
}

// node is a kwok node of arm's pool, of size.
func node(arm Arm, name string, size NodeSize) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(size.CPUMillis, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(size.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(size.Pods), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kwokNode: "fake"},
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", PoolLabel: arm.Key}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokNode, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// podObject is arm's pod of the workload: its requests, no limits, on the arm's pool.
func podObject(arm Arm, pod Pod) *corev1.Pod {
	requests := corev1.ResourceList{}
	if pod.CPURequestMillis > 0 {
		requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(pod.CPURequestMillis, resource.DecimalSI)
	}
	if pod.MemoryRequestBytes > 0 {
		requests[corev1.ResourceMemory] = *resource.NewQuantity(pod.MemoryRequestBytes, resource.BinarySI)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: arm.PodNamespace(), Name: pod.Name,
			Labels: map[string]string{workloadLabel: string(pod.Class), podLabel: pod.Name}},
		Spec: corev1.PodSpec{
			SchedulerName:                 arm.SchedulerName(),
			NodeSelector:                  map[string]string{PoolLabel: arm.Key},
			Tolerations:                   []corev1.Toleration{{Key: kwokNode, Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/outcome:1",
				Resources: corev1.ResourceRequirements{Requests: requests}}},
		},
	}
}

// replicaSetObject is arm's ReplicaSet of one replica running the workload's pod: what
// a descheduler evicts comes back, as it would in a cluster.
func replicaSetObject(arm Arm, pod Pod) *appsv1.ReplicaSet {
	template := podObject(arm, pod)
	selector := map[string]string{podLabel: pod.Name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: arm.PodNamespace(), Name: pod.Name, Labels: template.Labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: template.Labels}, Spec: template.Spec},
		},
	}
}

// createWorkloadPod creates arm's pod of the workload, bare or under a ReplicaSet.
func createWorkloadPod(ctx context.Context, clientset kubernetes.Interface, arm Arm, pod Pod, replicaSets bool) error {
	if replicaSets {
		_, err := clientset.AppsV1().ReplicaSets(arm.PodNamespace()).Create(ctx, replicaSetObject(arm, pod), metav1.CreateOptions{})
		return err
	}
	_, err := clientset.CoreV1().Pods(arm.PodNamespace()).Create(ctx, podObject(arm, pod), metav1.CreateOptions{})
	return err
}

// deleteWorkloadPod deletes arm's pod of the workload, or its ReplicaSet with its pods.
func deleteWorkloadPod(ctx context.Context, clientset kubernetes.Interface, arm Arm, pod Pod, replicaSets bool) error {
	if replicaSets {
		return clientset.AppsV1().ReplicaSets(arm.PodNamespace()).Delete(ctx, pod.Name,
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	}
	return clientset.CoreV1().Pods(arm.PodNamespace()).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

// createPools creates every arm's namespace and nodes, and waits until kwok has made
// each node Ready with the size asked.
func createPools(ctx context.Context, clientset kubernetes.Interface, arms []Arm, nodes map[string][]string, size NodeSize, log logr.Logger) error {
	for _, arm := range arms {
		for _, namespace := range arm.namespaces() {
			_, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create namespace %s: %w", namespace, err)
			}
		}
		for _, name := range nodes[arm.Key] {
			_, err := clientset.CoreV1().Nodes().Create(ctx, node(arm, name, size), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create node %s: %w", name, err)
			}
		}
	}
	total := 0
	for _, names := range nodes {
		total += len(names)
	}
	log.Info("nodes created; waiting for kwok to make them Ready, and the node controller to lift their not-ready taint", "nodes", total)
	// The node lifecycle controller lifts the not-ready taint that every new node gets at
	// about five nodes a second: a pool whose nodes are still tainted when the loop starts
	// would get its first pods late, and on its first nodes only.
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: PoolLabel})
		if err != nil {
			return false, err
		}
		wanted := map[string]bool{}
		for _, names := range nodes {
			for _, name := range names {
				wanted[name] = true
			}
		}
		ready := 0
		for i := range list.Items {
			node := &list.Items[i]
			if wanted[node.Name] && render.NodeReady(node) && node.Status.Allocatable.Cpu().MilliValue() == size.CPUMillis && onlyKwokTaint(node) {
				ready++
			}
		}
		return ready == total, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %d nodes to be Ready and untainted: %w", total, err)
	}
	return nil
}

// onlyKwokTaint is whether node has no taint but kwok's, which the workload tolerates.
func onlyKwokTaint(node *corev1.Node) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key != kwokNode {
			return false
		}
	}
	return true
}

// deletePools deletes the arms' namespaces (with their pods and SecondarySchedulers) and
// nodes, and waits until the namespaces are gone, so that the operator is done with the
// SecondarySchedulers before the next benchmark, and a next run can create them again.
// It deletes all it can before it reports what failed.
func deletePools(ctx context.Context, c client.Client, clientset kubernetes.Interface, arms []Arm) error {
	var errs []error
	for _, arm := range arms {
		if scheduler := arm.SecondaryScheduler(""); scheduler != nil {
			if err := c.Delete(ctx, scheduler); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("delete SecondaryScheduler %s: %w", arm.Key, err))
			}
		}
	}
	err := clientset.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: PoolLabel})
	if err != nil {
		errs = append(errs, fmt.Errorf("delete the pools' nodes: %w", err))
	}
	for _, arm := range arms {
		for _, namespace := range arm.namespaces() {
			err := clientset.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
			if client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("delete namespace %s: %w", namespace, err))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, arm := range arms {
			for _, namespace := range arm.namespaces() {
				_, err := clientset.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					return false, err
				}
			}
		}
		return true, nil
	})
}

// waitSchedulers waits until every arm's SecondaryScheduler is Available and, for the
// load-aware ones, says MetricsAvailable: the loop starts with every scheduler reading
// its metrics.
func waitSchedulers(ctx context.Context, c client.Client, arms []Arm, log logr.Logger) error {
	for _, arm := range arms {
		scheduler := arm.SecondaryScheduler("")
		if scheduler == nil {
			continue
		}
		wanted := []v1.ConditionType{v1.ConditionAvailable}
		if arm.Profile.Type.IsLoadAware() {
			wanted = append(wanted, v1.ConditionMetricsAvailable)
		}
		if arm.Descheduling != nil {
			// Its descheduler runs its first cycle as it starts: before the loop, on idle
			// nodes, so that the cycles within the loop come at whole intervals after it.
			wanted = append(wanted, v1.ConditionDescheduling)
		}
		var last string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(scheduler), scheduler); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, condition := range wanted {
				found := meta.FindStatusCondition(scheduler.Status.Conditions, string(condition))
				if found == nil || found.Status != metav1.ConditionTrue {
					if found != nil {
						last = fmt.Sprintf("%s %s: %s", condition, found.Reason, found.Message)
					}
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("SecondaryScheduler %s is not ready (last: %s): %w", arm.Key, last, err)
		}
		log.V(1).Info("scheduler ready", "arm", arm.Key)
	}
	return nil
}

// scoringOf is how arm's SecondaryScheduler scores now (status.metrics.scoring), empty
// when it cannot be read or says nothing.
func scoringOf(ctx context.Context, c client.Client, arm Arm) v1.ScoringMode {
	scheduler := arm.SecondaryScheduler("")
	if scheduler == nil || c.Get(ctx, client.ObjectKeyFromObject(scheduler), scheduler) != nil || scheduler.Status.Metrics == nil {
		return ""
	}
	return scheduler.Status.Metrics.Scoring
}
