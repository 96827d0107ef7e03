package scheduling

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBenchNode(t *testing.T) {
	node := benchNode(7, Options{}.withDefaults())
	if node.Name != "bench-node-7" {
		t.Errorf("name = %q", node.Name)
	}
	// kwok must leave the node alone: hack/kwokctl-config.yaml hands it nodes by this annotation.
	if _, managed := node.Annotations["kwok.x-k8s.io/node"]; managed {
		t.Errorf("the node is kwok's: %v", node.Annotations)
	}
	if node.Labels[nodeLabel] != "true" {
		t.Errorf("labels = %v, want %s=true", node.Labels, nodeLabel)
	}
	if !schedulable(node) {
		t.Errorf("a new node is not schedulable: %+v", node.Spec.Taints)
	}
	want := corev1.ResourceList{}
	for name, quantity := range map[corev1.ResourceName]string{corev1.ResourceCPU: "32", corev1.ResourceMemory: "16Gi", corev1.ResourcePods: "110"} {
		want[name] = resource.MustParse(quantity)
	}
	for name, quantity := range want {
		if got := node.Status.Allocatable[name]; got.Cmp(quantity) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), quantity.String())
		}
	}
}

func TestUnschedulable(t *testing.T) {
	node := func(i int, mutate func(*corev1.Node)) corev1.Node {
		n := benchNode(i, Options{}.withDefaults())
		if mutate != nil {
			mutate(n)
		}
		return *n
	}
	notReady := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }
	unreachable := func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule})
	}
	noCondition := func(n *corev1.Node) { n.Status.Conditions = nil }
	tests := []struct {
		name  string
		nodes []corev1.Node
		want  int
		names []string
	}{
		{name: "all schedulable", nodes: []corev1.Node{node(0, nil), node(1, nil)}, want: 2},
		{name: "not Ready", nodes: []corev1.Node{node(0, nil), node(1, notReady)}, want: 2, names: []string{"bench-node-1"}},
		{name: "another taint", nodes: []corev1.Node{node(0, unreachable), node(1, nil)}, want: 2, names: []string{"bench-node-0"}},
		{name: "no Ready condition", nodes: []corev1.Node{node(0, noCondition)}, want: 1, names: []string{"bench-node-0"}},
		{name: "missing", nodes: []corev1.Node{node(1, nil)}, want: 3, names: []string{"bench-node-0", "bench-node-2"}},
		{name: "none wanted", nodes: nil, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.names, unschedulable(tt.nodes, tt.want)); diff != "" {
				t.Errorf("unschedulable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenewPatch(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 22, 20, 0, 1, 123456789, time.UTC))
	got, err := renewPatch(at)
	if err != nil {
		t.Fatal(err)
	}
	// Microseconds: the node lifecycle controller counts a renewal only when renewTime
	// moves forward, and renewals a second apart must.
	if want := `{"spec":{"renewTime":"2026-11-22T20:00:01.123456Z"}}`; string(got) != want {
		t.Errorf("renewPatch = %s, want %s", got, want)
	}
}

func TestForEachConcurrently(t *testing.T) {
	failure := errors.New("failed")
	tests := []struct {
		name        string
		n, workers  int
		failAt      int // -1: none
		wantErr     error
		wantAtMost  int // calls, at most
		wantAtLeast int
	}{
		{name: "every index once", n: 100, workers: 8, failAt: -1, wantAtLeast: 100, wantAtMost: 100},
		{name: "fewer items than workers", n: 3, workers: 8, failAt: -1, wantAtLeast: 3, wantAtMost: 3},
		{name: "no items", n: 0, workers: 8, failAt: -1},
		{name: "zero workers means one", n: 5, workers: 0, failAt: -1, wantAtLeast: 5, wantAtMost: 5},
		{name: "an error stops the rest", n: 1000, workers: 1, failAt: 10, wantErr: failure, wantAtLeast: 11, wantAtMost: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls, inFlight, maxInFlight atomic.Int32
			seen := make([]atomic.Int32, tt.n)
			err := forEachConcurrently(context.Background(), tt.n, tt.workers, func(_ context.Context, i int) error {
				calls.Add(1)
				seen[i].Add(1)
				now := inFlight.Add(1)
				defer inFlight.Add(-1)
				for {
					most := maxInFlight.Load()
					if now <= most || maxInFlight.CompareAndSwap(most, now) {
						break
					}
				}
				time.Sleep(time.Millisecond)
				if i == tt.failAt {
					return failure
				}
				return nil
			})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if got := int(calls.Load()); got < tt.wantAtLeast || got > tt.wantAtMost {
				t.Errorf("%d calls, want %d to %d", got, tt.wantAtLeast, tt.wantAtMost)
			}
			if got := int(maxInFlight.Load()); got > max(tt.workers, 1) {
				t.Errorf("%d calls at once, want at most %d", got, max(tt.workers, 1))
			}
			for i := range seen {
				if got := seen[i].Load(); got > 1 {
					t.Errorf("index %d called %d times", i, got)
				}
			}
		})
	}
}
