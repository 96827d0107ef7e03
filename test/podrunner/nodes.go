package main

import (
	"context"
	"fmt"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// schedulerHostRole marks podrunner's nodes, where the scheduler pods really run.
const schedulerHostRole = "node-role.kubernetes.io/scheduler-host"

// heartbeatPeriod is how often each node's Lease and Ready condition are renewed.
const heartbeatPeriod = 10 * time.Second

// desiredNodes are the count Nodes podrunner keeps: the bare name when there is one, else
// NAME-1..NAME-count, spread round-robin over zones zone-a, zone-b, ...
func desiredNodes(name string, count, zones int) []*corev1.Node {
	nodes := make([]*corev1.Node, 0, count)
	for i := range count {
		nodeName := name
		if count > 1 {
			nodeName = fmt.Sprintf("%s-%d", name, i+1)
		}
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Labels: map[string]string{
				corev1.LabelHostname:     nodeName,
				schedulerHostRole:        "",
				corev1.LabelTopologyZone: "zone-" + string(rune('a'+i%zones)),
			},
		}})
	}
	return nodes
}

// registerNode creates a Node of the runner's, or takes over one left by an earlier run:
// with its labels, Ready, with room for the scheduler pods, and without the kwok
// annotation, so that kwok leaves it and its pods alone. It returns the Node's UID.
func (r *runner) registerNode(ctx context.Context, desired *corev1.Node) (types.UID, error) {
	nodes := r.clientset.CoreV1().Nodes()
	if _, err := nodes.Create(ctx, desired, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("register node %s: %w", desired.Name, err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return r.updateNodeStatus(ctx, desired.Name) }); err != nil {
		return "", fmt.Errorf("report node %s status: %w", desired.Name, err)
	}
	// The TaintNodesByCondition admission plugin taints new nodes not-ready; the node
	// lifecycle controller would lift it after a while, podrunner does at once.
	var uid types.UID
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := nodes.Get(ctx, desired.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		uid = current.UID
		labels := maps.Clone(current.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, desired.Labels)
		if len(current.Spec.Taints) == 0 && maps.Equal(labels, current.Labels) {
			return nil
		}
		current.Labels, current.Spec.Taints = labels, nil
		_, err = nodes.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("prepare node %s: %w", desired.Name, err)
	}
	return uid, nil
}

func (r *runner) updateNodeStatus(ctx context.Context, nodeName string) error {
	node, err := r.clientset.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "PodrunnerReady",
		Message: "podrunner runs this node's pods as host processes", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	node.Status.NodeInfo.KubeletVersion = "podrunner"
	// The API server reaches a node's kubelet (for kubectl logs) at its address and port.
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = r.kubeletPort
	_, err = r.clientset.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the node's Lease and Ready condition, as a kubelet does, until ctx
// ends: when podrunner stops or the node fails.
func (r *runner) heartbeat(ctx context.Context, nodeName string, nodeUID types.UID) {
	ticker := time.NewTicker(heartbeatPeriod)
	defer ticker.Stop()
	for {
		if err := r.renewLease(ctx, nodeName, nodeUID); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "renew node lease", "node", nodeName)
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return r.updateNodeStatus(ctx, nodeName) }); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "report node status", "node", nodeName)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// renewLease renews the node's Lease, creating it owned by the Node, as a kubelet does, so
// that the garbage collector removes it with the Node.
func (r *runner) renewLease(ctx context.Context, nodeName string, nodeUID types.UID) error {
	leases := r.clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: nodeName, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(nodeName), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
