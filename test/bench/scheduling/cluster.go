package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// benchNamespace holds the benchmark's pods and the schedulers' Leases.
	benchNamespace = "scheduling-bench"
	// nodeLabel marks the benchmark's nodes and their Leases; its pods select it, so that
	// other nodes of the cluster (the local cluster's fake nodes) take none of them.
	nodeLabel = "scheduling-bench.secondary-scheduler.io/node"
	// runLabel tells one run's pods from those of an earlier run still being deleted.
	runLabel = "scheduling-bench.secondary-scheduler.io/run"
	// nodeTaint keeps the cluster's own pods (the default scheduler's) off the benchmark's
	// nodes; the benchmark's pods tolerate it.
	nodeTaint = "scheduling-bench.secondary-scheduler.io/node"
	// nodeLeaseNamespace is where a kubelet's Lease says that its node is alive.
	nodeLeaseNamespace = corev1.NamespaceNodeLease
	// defaultCreateWorkers is how many create requests are in flight at once by default:
	// on two cores the API server creates pods no faster with more (see Options.CreateWorkers).
	defaultCreateWorkers = 16
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

// benchNode is the i-th node: allocatable as opts say, Ready, and tainted so that only
// the benchmark's pods go there. No kwok annotation: kwok leaves it and its pods alone
// (see createNodes).
func benchNode(i int, opts Options) *corev1.Node {
	name := nodeName(i)
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(opts.NodeMilliCPU), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(opts.NodeMemory), // checked by Run
		corev1.ResourcePods:   *resource.NewQuantity(int64(opts.PodsPerNode), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", nodeLabel: "true"},
		},
		Spec: corev1.NodeSpec{Taints: benchTaints()},
		// Ready from the start: nothing else will say so.
		Status: corev1.NodeStatus{Allocatable: allocatable, Capacity: allocatable, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}},
	}
}

func nodeName(i int) string { return "bench-node-" + strconv.Itoa(i) }

func benchTaints() []corev1.Taint {
	return []corev1.Taint{{Key: nodeTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
}

// createNodes creates the benchmark's nodes and their Leases (keeping those that exist,
// but for their taints) and waits until every node is schedulable.
//
// The nodes are not kwok's: kwok would renew their Leases all along (each about every
// 50 s in kwokctl's clusters) and write to every pod bound to them (its status once bound,
// again as it is deleted), on the API server and the two cores that the scheduler
// measured shares. On a real cluster kubelets do that from other machines.
// Like upstream's scheduler_perf, which runs no kubelet, the pods stay bound but never
// run. The node lifecycle controller still watches the nodes, so renewLeases keeps them
// alive between runs.
func createNodes(ctx context.Context, client kubernetes.Interface, opts Options) error {
	err := forEachConcurrently(ctx, opts.Nodes, opts.CreateWorkers, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Nodes().Create(ctx, benchNode(i, opts), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err = client.CoordinationV1().Leases(nodeLeaseNamespace).Create(ctx, nodeLease(nodeName(i)), metav1.CreateOptions{})
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
	// The nodes are Ready, so it is lifted here at once; the controller does not put it
	// back while their Leases are renewed.
	taints, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": benchTaints()}})
	if err != nil {
		return err
	}
	err = forEachConcurrently(ctx, opts.Nodes, opts.CreateWorkers, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Nodes().Patch(ctx, nodeName(i), types.MergePatchType, taints, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("lift the not-ready taint of the nodes: %w", err)
	}
	opts.Log.V(1).Info("nodes created; waiting for them to be schedulable", "nodes", opts.Nodes)
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		unschedulable, err := unschedulableNodes(ctx, client, opts.Nodes)
		return len(unschedulable) == 0, err
	})
	if err != nil {
		return fmt.Errorf("wait for %d nodes to be schedulable: %w", opts.Nodes, err)
	}
	return nil
}

// renewLeases renews (or creates) the Lease of every node, as a kubelet does every 10 s.
// The node lifecycle controller marks a node Unknown, and taints it, when neither its
// Lease nor its status changed for its grace period (kwokctl's clusters: 200 s; upstream's
// default: 50 s). The benchmark renews the Leases before each run, not during one: each
// run then has the API server to itself, and the time between renewals is one run (at
// most Options.RunTimeout), its scheduler's start and the clearing of its pods (seconds)
// and the wait for the machine to settle (see settle). measure checks after each run that
// no node was marked.
func renewLeases(ctx context.Context, client kubernetes.Interface, opts Options) error {
	leases := client.CoordinationV1().Leases(nodeLeaseNamespace)
	renew, err := renewPatch(metav1.NowMicro())
	if err != nil {
		return err
	}
	err = forEachConcurrently(ctx, opts.Nodes, opts.CreateWorkers, func(ctx context.Context, i int) error {
		_, err := leases.Patch(ctx, nodeName(i), types.MergePatchType, renew, metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			return err
		}
		_, err = leases.Create(ctx, nodeLease(nodeName(i)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("renew the nodes' Leases: %w", err)
	}
	return nil
}

// nodeLease is a node's Lease as a kubelet makes it, renewed now.
func nodeLease(node string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: nodeLeaseNamespace, Labels: map[string]string{nodeLabel: "true"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NowMicro()),
		},
	}
}

// renewPatch is the merge patch that renews a Lease at now. The node lifecycle
// controller counts a renewal only when renewTime moves forward.
func renewPatch(now metav1.MicroTime) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"renewTime": now}})
}

// unschedulableNodes are the names of the benchmark's nodes that are not schedulable, and
// of those missing of the want expected.
func unschedulableNodes(ctx context.Context, client kubernetes.Interface, want int) ([]string, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodeLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("list the benchmark's nodes: %w", err)
	}
	return unschedulable(nodes.Items, want), nil
}

// unschedulable are the names of nodes that are not Ready or have a taint other than the
// benchmark's, and of bench nodes 0..want-1 missing from nodes.
func unschedulable(nodes []corev1.Node, want int) []string {
	var names []string
	present := sets.New[string]()
	for i := range nodes {
		present.Insert(nodes[i].Name)
		if !schedulable(&nodes[i]) {
			names = append(names, nodes[i].Name)
		}
	}
	for i := range want {
		if !present.Has(nodeName(i)) {
			names = append(names, nodeName(i))
		}
	}
	return names
}

// schedulable is whether node is Ready with no taint but the one the pods tolerate.
func schedulable(node *corev1.Node) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key != nodeTaint {
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

// deleteNodes removes the benchmark's nodes and their Leases.
func deleteNodes(ctx context.Context, client kubernetes.Interface) error {
	selector := metav1.ListOptions{LabelSelector: nodeLabel + "=true"}
	if err := client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		return fmt.Errorf("delete the benchmark's nodes: %w", err)
	}
	if err := client.CoordinationV1().Leases(nodeLeaseNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		return fmt.Errorf("delete the benchmark's node Leases: %w", err)
	}
	return nil
}

// benchPod is the i-th pod of run: 100m CPU (opts.PodMilliCPU), no memory, for the
// BinPacking scheduler, on the benchmark's nodes. A pod of config OursRouted names no
// scheduler: the routing policy gives it the name.
func benchPod(run string, i int, opts Options, config Config) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%05d", run, i),
			Namespace: benchNamespace,
			Labels:    map[string]string{runLabel: run},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                 schedulerName,
			NodeSelector:                  map[string]string{nodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{{Key: nodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
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
	if config == OursRouted {
		pod.Spec.SchedulerName = ""
	}
	return pod
}

// clearPods deletes every pod of the benchmark (grace period 0: nothing runs them) and
// waits until they are gone, so that the next run starts on empty nodes. The pods are
// deleted one by one, concurrently: a DeleteCollection of thousands of pods outlasts the
// API server's request timeout on a small machine.
func clearPods(ctx context.Context, client kubernetes.Interface) error {
	pods := client.CoreV1().Pods(benchNamespace)
	everyRun := metav1.ListOptions{LabelSelector: runLabel}
	existing, err := pods.List(ctx, everyRun)
	if err != nil {
		return fmt.Errorf("list the benchmark's pods: %w", err)
	}
	err = forEachConcurrently(ctx, len(existing.Items), defaultCreateWorkers, func(ctx context.Context, i int) error {
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

// forEachConcurrently calls do for 0..n-1 on workers goroutines and returns the first
// error, after which the remaining calls are skipped.
func forEachConcurrently(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var running sync.WaitGroup
	for range min(max(workers, 1), n) {
		running.Go(func() {
			for i := range next {
				// The feeder may still hand out an index after the first error.
				if ctx.Err() != nil {
					continue
				}
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
	running.Wait()
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
