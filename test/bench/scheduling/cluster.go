package scheduling

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// benchNamespace holds the benchmark's pods and the schedulers' Leases.
	benchNamespace = "scheduling-bench"
	// nodeLabel marks the benchmark's nodes; its pods select it, so that other nodes of
	// the cluster (the local cluster's fake nodes) take none of them.
	nodeLabel = "scheduling-bench.secondary-scheduler.io/node"
	// runLabel tells one run's pods from those of an earlier run still being deleted.
	runLabel = "scheduling-bench.secondary-scheduler.io/run"
	// kwokNodeAnnotation hands a node to kwok (see hack/kwokctl-config.yaml), which keeps
	// it Ready and marks the pods bound to it Running.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// kwokTaint keeps the cluster's own pods off fake nodes, as hack/local-cluster.sh's do.
	kwokTaint = "kwok.x-k8s.io/node"
	// createWorkers is how many objects are created at once.
	createWorkers = 32
)

// ensureNamespace creates the benchmark's namespace and waits for its default
// ServiceAccount, without which the API server refuses pods.
func ensureNamespace(ctx context.Context, client kubernetes.Interface) error {
	namespaces := client.CoreV1().Namespaces()
	// A namespace left terminating by an earlier benchmark must go first: it takes no pods.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		existing, err := namespaces.Get(ctx, benchNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
			if _, err := namespaces.Create(ctx, namespace, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return false, err
			}
			return false, nil
		}
		return err == nil && existing.DeletionTimestamp == nil, err
	})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", benchNamespace, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(benchNamespace).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("wait for the default ServiceAccount of %s: %w", benchNamespace, err)
	}
	return nil
}

// benchNode is the i-th fake node, shaped as hack/local-cluster.sh's fake nodes are.
func benchNode(i int, opts Options) *corev1.Node {
	name := "bench-node-" + strconv.Itoa(i)
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(opts.NodeMilliCPU), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(opts.NodeMemory), // checked by Run
		corev1.ResourcePods:   *resource.NewQuantity(int64(opts.PodsPerNode), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok", nodeLabel: "true",
			},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokTaint, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		// Ready from the start, so that the benchmark does not wait for kwok's first
		// heartbeat and the node controller's lifting of the not-ready taint; kwok keeps it so.
		Status: corev1.NodeStatus{Allocatable: allocatable, Capacity: allocatable, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}},
	}
}

// createNodes creates the benchmark's nodes (keeping those that exist) and waits until
// kwok has made every one Ready and the node controller has lifted its not-ready taint.
func createNodes(ctx context.Context, client kubernetes.Interface, opts Options) error {
	err := forEachConcurrently(ctx, opts.Nodes, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Nodes().Create(ctx, benchNode(i, opts), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create nodes: %w", err)
	}
	// The API server's TaintNodesByCondition admission gives every new node the not-ready
	// taint, which the node controller lifts at about five nodes a second: 100 s for 500.
	// The nodes are Ready, so it is lifted here at once; the controller does not put it back.
	onlyKwokTaint := fmt.Appendf(nil, `{"spec":{"taints":[{"key":%q,"value":"fake","effect":%q}]}}`, kwokTaint, corev1.TaintEffectNoSchedule)
	err = forEachConcurrently(ctx, opts.Nodes, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Nodes().Patch(ctx, benchNode(i, opts).Name, types.MergePatchType, onlyKwokTaint, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("lift the not-ready taint of the nodes: %w", err)
	}
	opts.Log.V(1).Info("nodes created; waiting for them to be Ready", "nodes", opts.Nodes)
	selector := metav1.ListOptions{LabelSelector: nodeLabel + "=true"}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, selector)
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range nodes.Items {
			if schedulable(&nodes.Items[i]) {
				ready++
			}
		}
		return ready >= opts.Nodes, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %d nodes to be Ready: %w", opts.Nodes, err)
	}
	return nil
}

// schedulable is whether node is Ready with no taint but the kwok one the pods tolerate.
func schedulable(node *corev1.Node) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key != kwokTaint {
			return false
		}
	}
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			return condition.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deleteNodes removes the benchmark's nodes.
func deleteNodes(ctx context.Context, client kubernetes.Interface) error {
	err := client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: nodeLabel + "=true"})
	if err != nil {
		return fmt.Errorf("delete the benchmark's nodes: %w", err)
	}
	return nil
}

// benchPod is the i-th pod of run: 100m CPU (opts.PodMilliCPU), no memory, for the
// BinPacking scheduler, on the benchmark's nodes.
func benchPod(run string, i int, opts Options) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%05d", run, i),
			Namespace: benchNamespace,
			Labels:    map[string]string{runLabel: run},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                 schedulerName,
			NodeSelector:                  map[string]string{nodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{{Key: kwokTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  ptr.To(false),
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: *resource.NewMilliQuantity(int64(opts.PodMilliCPU), resource.DecimalSI),
				}},
			}},
		},
	}
}

// clearPods deletes every pod of the benchmark (grace period 0: kwok runs nothing to
// stop) and waits until they are gone, so that the next run starts on empty nodes. The
// pods are deleted one by one, concurrently: a DeleteCollection of thousands of pods
// outlasts the API server's request timeout on a small machine.
func clearPods(ctx context.Context, client kubernetes.Interface) error {
	pods := client.CoreV1().Pods(benchNamespace)
	everyRun := metav1.ListOptions{LabelSelector: runLabel}
	existing, err := pods.List(ctx, everyRun)
	if err != nil {
		return fmt.Errorf("list the benchmark's pods: %w", err)
	}
	err = forEachConcurrently(ctx, len(existing.Items), func(ctx context.Context, i int) error {
		err := pods.Delete(ctx, existing.Items[i].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete the benchmark's pods: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, err := pods.List(ctx, metav1.ListOptions{LabelSelector: runLabel, Limit: 1})
		if err != nil {
			return false, err
		}
		return len(left.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the benchmark's pods to be gone: %w", err)
	}
	return nil
}

// forEachConcurrently calls do for 0..n-1 on createWorkers goroutines and returns the
// first error, after which the remaining calls are skipped.
func forEachConcurrently(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var workers sync.WaitGroup
	for range min(createWorkers, n) {
		workers.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	workers.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// deleteLease deletes a scheduler's Lease.
func deleteLease(ctx context.Context, client kubernetes.Interface, lease string) error {
	err := client.CoordinationV1().Leases(benchNamespace).Delete(ctx, lease, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete lease %s: %w", lease, err)
	}
	return nil
}

// deleteNamespace deletes the benchmark's namespace, without waiting for it to go.
func deleteNamespace(ctx context.Context, client kubernetes.Interface) error {
	err := client.CoreV1().Namespaces().Delete(ctx, benchNamespace, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", benchNamespace, err)
	}
	return nil
}
