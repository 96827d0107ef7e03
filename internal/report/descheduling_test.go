package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/deschedmetrics"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

func TestNodesAboveBand(t *testing.T) {
	use := map[string]float64{"a": 0.55, "b": 0.9, "c": 0.2, "d": 0.5, "e": 0.9}
	for _, tc := range []struct {
		name       string
		thresholds render.DeschedulingThresholds
		want       []string
	}{
		{"percent of the node's CPU: strictly above", render.DeschedulingThresholds{ReceiveBelow: 30, EvictAbove: 50}, []string{"b", "e", "a"}},
		// The mean is 61: above 61 + 10.
		{"points above the nodes' mean", render.DeschedulingThresholds{Deviation: true, ReceiveBelow: 10, EvictAbove: 10}, []string{"b", "e"}},
		{"none above", render.DeschedulingThresholds{ReceiveBelow: 80, EvictAbove: 95}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NodesAboveBand(use, tc.thresholds)); diff != "" {
				t.Errorf("nodes above (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeschedulingReportsWhatTheOperatorRead(t *testing.T) {
	seen := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	loadAware := func(mode v1.DeschedulingMode) *v1.SecondaryScheduler {
		return &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "schedulers", Name: "load-aware"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](40)}}, Descheduling: &v1.Descheduling{Mode: mode}}}
	}
	ready := rolledOutDescheduler("h1")
	for _, tc := range []struct {
		name    string
		cr      *v1.SecondaryScheduler
		facts   DeschedulingFacts
		want    v1.DeschedulingStatus
		message []string
	}{{
		name:  "nothing read yet: no figures",
		cr:    loadAware(v1.DeschedulingEvict),
		facts: DeschedulingFacts{Deployment: ready, TemplateHash: "h1"},
		want: v1.DeschedulingStatus{Deployment: "schedulers/load-aware-descheduler", Mode: v1.DeschedulingEvict, ReceiveBelowPercent: 30, EvictAbovePercent: 50,
			ReadyReplicas: 2, Replicas: 2},
	}, {
		name: "cycles, evictions by node and the nodes above the band",
		cr:   loadAware(v1.DeschedulingEvict),
		facts: DeschedulingFacts{Deployment: ready, TemplateHash: "h1", NodeNames: []string{"n1", "n2", "n3"}, Activity: &DeschedulerActivity{Read: true,
			Summary: deschedmetrics.Summary{Cycles: 4, LastCycleSeen: seen, Evicted: map[string]uint64{"n1": 3, "n2": 1}},
			NodeUse: map[string]float64{"n1": 0.62, "n2": 0.45, "n3": 0.1}}},
		want: v1.DeschedulingStatus{Deployment: "schedulers/load-aware-descheduler", Mode: v1.DeschedulingEvict, ReceiveBelowPercent: 30, EvictAbovePercent: 50,
			ReadyReplicas: 2, Replicas: 2, CyclesLastHour: 4, LastCycleSeen: &metav1.Time{Time: seen}, EvictionsLastHour: 4,
			EvictedFrom: []v1.NodeEvictions{{Node: "n1", Pods: 3}, {Node: "n2", Pods: 1}}, NodesAboveBand: []string{"n1"}, NodesAboveBandCount: 1},
		message: []string{"the descheduler runs: it evicts pods of load-aware from nodes above 50 %"},
	}, {
		name: "nodes of another pool, which the query answers for too, are not this descheduler's",
		cr:   loadAware(v1.DeschedulingEvict),
		facts: DeschedulingFacts{Deployment: ready, TemplateHash: "h1", NodeNames: []string{"n1", "n2"}, Activity: &DeschedulerActivity{Read: true,
			NodeUse: map[string]float64{"n1": 0.62, "n2": 0.45, "other-pool-1": 0.95, "other-pool-2": 0.7}}},
		want: v1.DeschedulingStatus{Deployment: "schedulers/load-aware-descheduler", Mode: v1.DeschedulingEvict, ReceiveBelowPercent: 30, EvictAbovePercent: 50,
			ReadyReplicas: 2, Replicas: 2, NodesAboveBand: []string{"n1"}, NodesAboveBandCount: 1},
	}, {
		name: "dry run says what it would have evicted",
		cr:   loadAware(v1.DeschedulingDryRun),
		facts: DeschedulingFacts{Deployment: ready, TemplateHash: "h1", Activity: &DeschedulerActivity{Read: true,
			Summary: deschedmetrics.Summary{Cycles: 1, Evicted: map[string]uint64{"n1": 2}, CountedSince: seen}}},
		want: v1.DeschedulingStatus{Deployment: "schedulers/load-aware-descheduler", Mode: v1.DeschedulingDryRun, ReceiveBelowPercent: 30, EvictAbovePercent: 50,
			ReadyReplicas: 2, Replicas: 2, CyclesLastHour: 1, EvictionsLastHour: 2, EvictedFrom: []v1.NodeEvictions{{Node: "n1", Pods: 2}},
			CountedSince: &metav1.Time{Time: seen}},
		message: []string{"mode DryRun", "In the last hour it would have evicted 2 pods"},
	}, {
		name: "a node without a fresh sample: the failsafe holds the descheduler back, and the condition says so",
		cr:   loadAware(v1.DeschedulingEvict),
		facts: DeschedulingFacts{Deployment: ready, TemplateHash: "h1", NodeNames: []string{"n1", "n2"}, Activity: &DeschedulerActivity{
			NodeUse: map[string]float64{"n1": 0.9}, Unread: "the metrics of pod p: HTTP 500"}},
		want: v1.DeschedulingStatus{Deployment: "schedulers/load-aware-descheduler", Mode: v1.DeschedulingEvict, ReceiveBelowPercent: 30, EvictAbovePercent: 50,
			ReadyReplicas: 2, Replicas: 2, NodesAboveBand: []string{"n1"}, NodesAboveBandCount: 1, NodesWithoutFreshMetrics: 1,
			Unread: "the metrics of pod p: HTTP 500"},
		message: []string{"1 of the scheduler's nodes have no fresh sample: its cycles evict nothing", "could not read all of its work"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			status := &v1.SecondarySchedulerStatus{}
			Descheduling(tc.cr, status, NewConditions(tc.cr, status), tc.facts)
			if diff := cmp.Diff(&tc.want, status.Descheduling); diff != "" {
				t.Errorf("status.descheduling (-want +got):\n%s", diff)
			}
			condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionDescheduling))
			if condition == nil || condition.Status != metav1.ConditionTrue {
				t.Fatalf("Descheduling condition %+v, want True", condition)
			}
			for _, part := range tc.message {
				if !strings.Contains(condition.Message, part) {
					t.Errorf("message %q does not say %q", condition.Message, part)
				}
			}
		})
	}
}

// rolledOutDescheduler is a descheduler Deployment whose two pods run the template of hash
// templateHash, ready, as its controller reports once it has rolled it out.
func rolledOutDescheduler(templateHash string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 4},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Annotations: map[string]string{render.PodTemplateHashAnnotation: templateHash}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2}}
}

// While pods of an earlier template run, the descheduler acts as that template says (a pod
// of mode Evict evicts after a switch to DryRun): Descheduling says it rolls out, whatever
// the Deployment counts ready, and says how many run the earlier one.
func TestDeschedulingWhileItsPodsRunAnEarlierTemplate(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "schedulers", Name: "load-aware"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile},
			Descheduling: &v1.Descheduling{Mode: v1.DeschedulingDryRun}}}
	surging := rolledOutDescheduler("h2")
	surging.Status.Replicas, surging.Status.UpdatedReplicas = 3, 1
	unobserved := rolledOutDescheduler("h2")
	unobserved.Generation = 5
	for _, tc := range []struct {
		name       string
		deployment *appsv1.Deployment
		wantReason v1.ConditionReason
		wantOld    string
	}{
		{"the cache holds the Deployment from before the apply", rolledOutDescheduler("h1"), v1.ReasonDeschedulerRollingOut, "2 of its pods"},
		{"its controller has not seen the new template", unobserved, v1.ReasonDeschedulerRollingOut, "2 of its pods"},
		{"a new pod beside two of the earlier template", surging, v1.ReasonDeschedulerRollingOut, "2 of its pods"},
		{"rolled out", rolledOutDescheduler("h2"), v1.ReasonDeschedulerDryRun, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := &v1.SecondarySchedulerStatus{}
			Descheduling(cr, status, NewConditions(cr, status), DeschedulingFacts{Deployment: tc.deployment, TemplateHash: "h2"})
			condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionDescheduling))
			if condition == nil || condition.Reason != string(tc.wantReason) || !strings.Contains(condition.Message, tc.wantOld) {
				t.Fatalf("Descheduling %+v, want reason %s saying %q", condition, tc.wantReason, tc.wantOld)
			}
		})
	}
}
