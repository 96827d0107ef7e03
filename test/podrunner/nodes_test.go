package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDesiredNodes(t *testing.T) {
	node := func(name, zone string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "node-role.kubernetes.io/scheduler-host": "", "topology.kubernetes.io/zone": zone,
		}}}
	}
	tests := []struct {
		name         string
		count, zones int
		want         []*corev1.Node
	}{
		{
			name: "one node keeps the bare name", count: 1, zones: 2,
			want: []*corev1.Node{node("scheduler-host", "zone-a")},
		},
		{
			name: "three nodes over two zones", count: 3, zones: 2,
			want: []*corev1.Node{node("scheduler-host-1", "zone-a"), node("scheduler-host-2", "zone-b"), node("scheduler-host-3", "zone-a")},
		},
		{
			name: "four nodes over three zones", count: 4, zones: 3,
			want: []*corev1.Node{node("scheduler-host-1", "zone-a"), node("scheduler-host-2", "zone-b"),
				node("scheduler-host-3", "zone-c"), node("scheduler-host-4", "zone-a")},
		},
		{
			name: "three nodes in one zone", count: 3, zones: 1,
			want: []*corev1.Node{node("scheduler-host-1", "zone-a"), node("scheduler-host-2", "zone-a"), node("scheduler-host-3", "zone-a")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, desiredNodes("scheduler-host", tt.count, tt.zones)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterNodeTakesOverALeftoverNode(t *testing.T) {
	leftover := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduler-host-2", UID: "5f0c", Labels: map[string]string{"kubernetes.io/hostname": "scheduler-host-2", "team": "a"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}},
	}
	r := &runner{clientset: fake.NewClientset(leftover)}
	desired := desiredNodes("scheduler-host", 3, 2)[1]
	uid, err := r.registerNode(context.Background(), desired)
	if err != nil {
		t.Fatal(err)
	}
	if uid != "5f0c" {
		t.Errorf("uid %q, want the Node's, 5f0c", uid)
	}
	node, err := r.clientset.CoreV1().Nodes().Get(context.Background(), "scheduler-host-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"kubernetes.io/hostname": "scheduler-host-2", "node-role.kubernetes.io/scheduler-host": "",
		"topology.kubernetes.io/zone": "zone-b", "team": "a"}
	if diff := cmp.Diff(wantLabels, node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(node.Spec.Taints) != 0 {
		t.Errorf("taints %v, want none", node.Spec.Taints)
	}
	if len(node.Status.Conditions) != 1 || node.Status.Conditions[0].Type != corev1.NodeReady || node.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions %v, want Ready", node.Status.Conditions)
	}
}

func TestRenewLeaseCreatesItOwnedByTheNode(t *testing.T) {
	r := &runner{clientset: fake.NewClientset()}
	if err := r.renewLease(context.Background(), "scheduler-host-1", "5f0c"); err != nil {
		t.Fatal(err)
	}
	lease, err := r.clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "scheduler-host-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "scheduler-host-1", UID: "5f0c"}}
	if diff := cmp.Diff(want, lease.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
}
