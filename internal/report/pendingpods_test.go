package report

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
)

// TestPendingPodsSaysWhyTheyWait checks the PodsPending condition's reason, from the
// conditions already set, and what its message names.
func TestPendingPodsSaysWhyTheyWait(t *testing.T) {
	oldest := time.Date(2026, 11, 25, 11, 50, 0, 0, time.UTC)
	stuck := pendingpods.Pending{Count: 2, OldestSince: oldest, Examples: []string{"team/a", "team/b"},
		Oldest: types.NamespacedName{Namespace: "team", Name: "a"}}
	unschedulable := stuck
	unschedulable.Unschedulable = "0/3 nodes are available: 3 Insufficient cpu."
	gang := unschedulable
	gang.Gang = "team/training"
	gang.Unschedulable = `pod group is unschedulable, minCount (3) cannot be satisfied`
	gangUnexplained := stuck
	gangUnexplained.Gang = "team/training"
	available := func(isTrue bool, reason v1.ConditionReason) func(*Conditions) {
		return func(c *Conditions) { c.Set(v1.ConditionAvailable, isTrue, reason, "") }
	}
	tests := []struct {
		name     string
		pending  pendingpods.Pending
		pool     *v1.NodePoolStatus
		setUp    func(*Conditions)
		isTrue   bool
		reason   v1.ConditionReason
		contains []string
	}{
		{"none", pendingpods.Pending{NextDue: time.Minute}, nil, available(true, v1.ReasonSchedulerReady), false, v1.ReasonNoPodsPending,
			[]string{"no pod naming scheduler packer", "2m0s"}},
		{"the scheduler does not run", unschedulable, nil, available(false, v1.ReasonSchedulerCrashing), true, v1.ReasonSchedulerNotRunning,
			[]string{"2 pods naming scheduler packer have waited longer than 2m0s", "2026-11-25T11:50:00Z", "team/a, team/b", "SchedulerCrashing"}},
		{"no condition Available yet", stuck, nil, func(*Conditions) {}, true, v1.ReasonSchedulerNotRunning, []string{"unknown"}},
		{"an empty node pool", unschedulable, &v1.NodePoolStatus{Selector: "pool=batch"}, available(true, v1.ReasonSchedulerReady), true,
			v1.ReasonNodePoolEmpty, []string{"spec.nodePool (pool=batch) matches no node"}},
		{"no node fits", unschedulable, &v1.NodePoolStatus{Selector: "pool=batch", Nodes: 3}, available(true, v1.ReasonSchedulerReady), true,
			v1.ReasonPodsUnschedulable, []string{`"0/3 nodes are available: 3 Insufficient cpu."`, "kubectl describe pod -n team a"}},
		{"the scheduler says nothing", stuck, nil, available(true, v1.ReasonSchedulerReady), true, v1.ReasonPodsNotScheduled,
			[]string{"kubectl logs -n ns deployment/packer-scheduler"}},
		{"a gang waits, in its plugin's words", gang, nil, available(true, v1.ReasonSchedulerReady), true, v1.ReasonGangWaiting,
			[]string{"gang team/training", `"pod group is unschedulable, minCount (3) cannot be satisfied"`, "kubectl get podgroups -n team training"}},
		{"a gang waits, unexplained yet", gangUnexplained, nil, available(true, v1.ReasonSchedulerReady), true, v1.ReasonGangWaiting,
			[]string{"it has not said why yet", "create the rest of the gang"}},
		{"a gang whose scheduler does not run", func() pendingpods.Pending { p := gang; return p }(), nil, available(false, v1.ReasonSchedulerCrashing), true,
			v1.ReasonSchedulerNotRunning, []string{"SchedulerCrashing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "packer"}}
			status := &v1.SecondarySchedulerStatus{SchedulerName: "packer", NodePool: tt.pool}
			conditions := NewConditions(cr, status)
			tt.setUp(conditions)
			PendingPods(cr, status, conditions, tt.pending, nil)
			condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionPodsPending))
			if condition == nil || (condition.Status == metav1.ConditionTrue) != tt.isTrue || condition.Reason != string(tt.reason) {
				t.Fatalf("PodsPending = %+v, want %t/%s", condition, tt.isTrue, tt.reason)
			}
			for _, text := range tt.contains {
				if !strings.Contains(condition.Message, text) {
					t.Errorf("message %q lacks %q", condition.Message, text)
				}
			}
			if (status.PendingPods != nil) != tt.isTrue {
				t.Errorf("status.pendingPods = %+v", status.PendingPods)
			}
			if tt.isTrue && (status.PendingPods.Count != int32(tt.pending.Count) || !status.PendingPods.OldestSince.Time.Equal(oldest)) {
				t.Errorf("status.pendingPods = %+v", status.PendingPods)
			}
		})
	}
}

// TestPendingPodsNamesTheQuotaThatHoldsThem checks that a pod CapacityScheduling holds to
// its ElasticQuota is reported with the quota's figures, before its gang, and that a
// scheduler that does not run still says so first.
func TestPendingPodsNamesTheQuotaThatHoldsThem(t *testing.T) {
	pending := pendingpods.Pending{Count: 1, OldestSince: time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), Examples: []string{"team/big"},
		Oldest: types.NamespacedName{Namespace: "team", Name: "big"}, Gang: "team/training",
		Unschedulable: "0/2 nodes are available: pod is rejected in PreFilter"}
	overMax := &pendingpods.QuotaRefusal{Quota: "team/quota", Resource: corev1.ResourceCPU,
		Used: resource.MustParse("1500m"), Requested: resource.MustParse("500m"), Bound: resource.MustParse("1500m")}
	borrowing := &pendingpods.QuotaRefusal{Quota: "team/quota", Resource: corev1.ResourceCPU,
		Used: resource.MustParse("3"), Requested: resource.MustParse("500m"), Bound: resource.MustParse("3"), Borrowing: true}
	tests := []struct {
		name      string
		available bool
		quota     *pendingpods.QuotaRefusal
		reason    v1.ConditionReason
		contains  []string
	}{
		{"beyond its max", true, overMax, v1.ReasonQuotaExceeded,
			[]string{"holds the oldest, team/big", "ElasticQuota team/quota uses 1500m of its max of 1500m cpu; the pod requests 500m more", "kubectl get elasticquotas -A"}},
		{"beyond every min", true, borrowing, v1.ReasonQuotaExceeded,
			[]string{"may borrow only what other namespaces leave of their min", "use 3 of cpu with the 3 of their mins"}},
		{"no quota holds it: its gang", true, nil, v1.ReasonGangWaiting, []string{"gang team/training"}},
		{"the scheduler does not run", false, overMax, v1.ReasonSchedulerNotRunning, []string{"SchedulerCrashing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "quotas"}}
			status := &v1.SecondarySchedulerStatus{SchedulerName: "quotas"}
			conditions := NewConditions(cr, status)
			if tt.available {
				conditions.Set(v1.ConditionAvailable, true, v1.ReasonSchedulerReady, "")
			} else {
				conditions.Set(v1.ConditionAvailable, false, v1.ReasonSchedulerCrashing, "")
			}
			PendingPods(cr, status, conditions, pending, tt.quota)
			condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionPodsPending))
			if condition == nil || condition.Status != metav1.ConditionTrue || condition.Reason != string(tt.reason) {
				t.Fatalf("PodsPending = %+v, want True/%s", condition, tt.reason)
			}
			for _, text := range tt.contains {
				if !strings.Contains(condition.Message, text) {
					t.Errorf("message %q lacks %q", condition.Message, text)
				}
			}
		})
	}
}

// TestHoldsToQuotas checks that quotas are read for a scheduler whose configuration runs
// CapacityScheduling, and for no other.
func TestHoldsToQuotas(t *testing.T) {
	for _, tt := range []struct {
		controller *v1.PluginControllerStatus
		want       bool
	}{
		{nil, false},
		{&v1.PluginControllerStatus{Plugins: []string{"Coscheduling"}}, false},
		{&v1.PluginControllerStatus{Plugins: []string{"CapacityScheduling", "Coscheduling"}}, true},
	} {
		if got := HoldsToQuotas(&v1.SecondarySchedulerStatus{PluginController: tt.controller}); got != tt.want {
			t.Errorf("HoldsToQuotas(%+v) = %t, want %t", tt.controller, got, tt.want)
		}
	}
}
