package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons/reasonstest"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

func binPacking(name string) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile}},
	}
}

func TestPlacementProblem(t *testing.T) {
	withSelector := binPacking("placed")
	withSelector.Spec.NodeSelector = map[string]string{"role": "infra"}
	withSelector.Spec.Tolerations = []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}
	pooled := binPacking("pooled")
	tests := []struct {
		name   string
		cr     *v1.SecondaryScheduler
		found  gather.Placement
		reason v1.ConditionReason // empty: no problem
		says   []string
	}{
		{"nodes for the pods, no pool", withSelector, gather.Placement{Nodes: 3, Matching: 2}, "", nil},
		{"nodes for the pods and the pool", pooled, gather.Placement{Nodes: 3, Matching: 3, Pool: &v1.NodePoolStatus{Selector: "pool=a", Nodes: 1}}, "", nil},
		{"no node at all", pooled, gather.Placement{}, v1.ReasonNoSchedulableNodes, []string{"no node"}},
		{"every node excluded", withSelector, gather.Placement{Nodes: 5, NotReady: 2, Cordoned: 1, Matching: 0}, v1.ReasonNoSchedulableNodes, []string{
			"none of the cluster's 5 nodes", "Ready (2 are not)", "schedulable (1 is cordoned)", "matching nodeSelector role=infra",
			"tolerated by the 1 tolerations given", "uncordon or add such a node",
		}},
		{"no toleration", pooled, gather.Placement{Nodes: 1, Matching: 0}, v1.ReasonNoSchedulableNodes, []string{"spec.tolerations is empty"}},
		{"empty pool", pooled, gather.Placement{Nodes: 4, Matching: 4, Pool: &v1.NodePoolStatus{Selector: "pool=a"}}, v1.ReasonNodePoolEmpty, []string{
			"spec.nodePool (pool=a) matches none of the cluster's 4 nodes", "spec.schedulerName: pooled stay Pending",
		}},
		{"no node for the pods outweighs an empty pool", pooled, gather.Placement{Nodes: 4, NotReady: 4, Pool: &v1.NodePoolStatus{Selector: "pool=a"}},
			v1.ReasonNoSchedulableNodes, []string{"Ready (4 are not)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reasonstest.ExpectFinding(t, PlacementProblem(tt.cr, tt.found), tt.reason, tt.says)
		})
	}
}

// TestReportingCannotWrite proves, over the package's own types and code, that deriving
// the status can reach no writer (internal/readonly/readonlytest).
func TestReportingCannotWrite(t *testing.T) {
	readonlytest.AssertCannotWrite(t, ".")
}

func TestExplainProbeSaysWhatTheOperatorKnows(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer"}}
	withRules := &gather.Facts{Access: &gather.MetricsAccess{}, RecordingRules: gather.RecordingRulesPlan{Target: &render.RecordingRuleTarget{Namespace: "monitoring"}}}
	withIdentity := &gather.Facts{Access: &gather.MetricsAccess{Identity: &render.MetricsIdentity{ClusterRole: "cluster-monitoring-view"}}}
	notInstalled := &gather.Facts{Access: &gather.MetricsAccess{}, RecordingRules: gather.RecordingRulesPlan{Note: "no ruleSelector"}}
	tests := []struct {
		name       string
		desired    *gather.Facts
		result     metricsprobe.Result
		wantReason v1.ConditionReason
		wantSuffix string
	}{
		{"available stays as it is", withRules, metricsprobe.Result{Available: true, Reason: v1.ReasonMetricsAvailable, Message: "ok"}, v1.ReasonMetricsAvailable, "ok"},
		{"rules asked for but not installable", notInstalled, metricsprobe.Result{Reason: v1.ReasonNodeLabelMismatch, Message: "2 nodes."}, v1.ReasonRecordingRulesNotInstalled, "2 nodes. no ruleSelector"},
		{"rules installed, not evaluated yet", withRules, metricsprobe.Result{Reason: v1.ReasonRecordingRuleMissing, Message: "missing."},
			v1.ReasonRecordingRuleMissing, "installed PrometheusRule monitoring/secondary-scheduler.platform.packer.load-watcher; the series appear once the Prometheus Operator has loaded it into Prometheus and it has been evaluated, usually within a few minutes."},
		{"bound token refused", withIdentity, metricsprobe.Result{Reason: v1.ReasonUnauthorized, Message: "HTTP 403."}, v1.ReasonUnauthorized, "A token that is no longer valid is replaced at the next probe."},
		{"token of the user's refused: nothing to add", notInstalled, metricsprobe.Result{Reason: v1.ReasonUnauthorized, Message: "HTTP 401."}, v1.ReasonUnauthorized, "HTTP 401."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explainProbe(cr, tt.desired, tt.result)
			if got.Reason != tt.wantReason || !strings.HasSuffix(got.Message, tt.wantSuffix) {
				t.Errorf("explainProbe = %s %q, want %s ending in %q", got.Reason, got.Message, tt.wantReason, tt.wantSuffix)
			}
		})
	}
}

// TestRefusedReportsTheMetricsProblemAmongOthers checks that a refusal naming several
// problems keeps its first reason in Degraded, and that MetricsAvailable says what keeps
// the metrics away even when that problem came second.
func TestRefusedReportsTheMetricsProblemAmongOthers(t *testing.T) {
	cr := binPacking("load-variation")
	status := &v1.SecondarySchedulerStatus{}
	conditions := NewConditions(cr, status)
	joined, _ := refusal.As(refusal.Join(
		refusal.New(v1.ReasonPriorityClassNotFound, "PriorityClass absent does not exist."),
		refusal.New(v1.ReasonCABundleNotFound, "ConfigMap prometheus-ca does not exist.")))
	Refused(conditions, status, joined)
	degraded := meta.FindStatusCondition(status.Conditions, string(v1.ConditionDegraded))
	if degraded == nil || degraded.Reason != string(v1.ReasonPriorityClassNotFound) || !strings.Contains(degraded.Message, "prometheus-ca") {
		t.Errorf("Degraded = %+v, want PriorityClassNotFound naming the CA bundle too", degraded)
	}
	metrics := meta.FindStatusCondition(status.Conditions, string(v1.ConditionMetricsAvailable))
	if metrics == nil || metrics.Status != metav1.ConditionFalse || metrics.Reason != string(v1.ReasonCABundleNotFound) ||
		metrics.Message != "ConfigMap prometheus-ca does not exist." {
		t.Errorf("MetricsAvailable = %+v, want False with CABundleNotFound and its own message", metrics)
	}
}

// A refusal applies nothing, so it checks nothing: what an earlier check found of the
// metrics, extenders and descheduler turns Unknown, its finding kept in the message, and
// stays so (the same message, so no status write) while the refusal lasts; a refusal that
// is itself a metrics problem still says so in MetricsAvailable. Conditions the scheduler
// never had are not made up.
func TestRefusedChecksNothing(t *testing.T) {
	cr := binPacking("refused")
	cr.Generation = 4
	status := &v1.SecondarySchedulerStatus{}
	checked := NewConditions(cr, status)
	checked.Set(v1.ConditionMetricsAvailable, true, v1.ReasonMetricsAvailable, "Every node has fresh series.")
	checked.Set(v1.ConditionDescheduling, true, v1.ReasonDeschedulerReady, "The descheduler runs.")

	cr.Generation = 5
	conditions := NewConditions(cr, status)
	Refused(conditions, status, refusal.New(v1.ReasonPriorityClassNotFound, "PriorityClass absent does not exist."))
	for _, conditionType := range []v1.ConditionType{v1.ConditionMetricsAvailable, v1.ConditionDescheduling} {
		condition := meta.FindStatusCondition(status.Conditions, string(conditionType))
		if condition == nil || condition.Status != metav1.ConditionUnknown || condition.Reason != string(v1.ReasonNotChecked) ||
			condition.ObservedGeneration != 5 || !strings.Contains(condition.Message, "refused") ||
			!strings.Contains(condition.Message, "When last checked, for generation 4: True") {
			t.Errorf("%s = %+v, want Unknown, NotChecked for generation 5, saying generation 4's check found True", conditionType, condition)
		}
	}
	if condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionExtendersAvailable)); condition != nil {
		t.Errorf("ExtendersAvailable = %+v, want none: the scheduler never had extenders", condition)
	}

	before := slices.Clone(status.Conditions)
	cr.Generation = 6
	Refused(NewConditions(cr, status), status, refusal.New(v1.ReasonPriorityClassNotFound, "PriorityClass other does not exist."))
	metrics := meta.FindStatusCondition(status.Conditions, string(v1.ConditionMetricsAvailable))
	if metrics == nil || metrics.Message != meta.FindStatusCondition(before, string(v1.ConditionMetricsAvailable)).Message {
		t.Errorf("MetricsAvailable after a second refusal = %+v, want the message of the first, which tells generation 4's check", metrics)
	}

	Refused(NewConditions(cr, status), status, refusal.New(v1.ReasonCABundleNotFound, "ConfigMap prometheus-ca does not exist."))
	metrics = meta.FindStatusCondition(status.Conditions, string(v1.ConditionMetricsAvailable))
	if metrics == nil || metrics.Status != metav1.ConditionFalse || metrics.Reason != string(v1.ReasonCABundleNotFound) {
		t.Errorf("MetricsAvailable = %+v, want False with CABundleNotFound: the refusal is the metrics' own problem", metrics)
	}
	// The same refusal again changes nothing, not even when it turned False.
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	metrics.LastTransitionTime = since
	Refused(NewConditions(cr, status), status, refusal.New(v1.ReasonCABundleNotFound, "ConfigMap prometheus-ca does not exist."))
	if metrics = meta.FindStatusCondition(status.Conditions, string(v1.ConditionMetricsAvailable)); !metrics.LastTransitionTime.Equal(&since) {
		t.Errorf("MetricsAvailable turned False at %v after the same refusal again, want %v: it never stopped being False", metrics.LastTransitionTime, since)
	}
}

// A removed scheduler runs nothing: nothing of what it ran stays in status.
func TestRemovedLeavesNothingOfWhatRan(t *testing.T) {
	cr := binPacking("removed")
	status := &v1.SecondarySchedulerStatus{ReadyReplicas: 1, Replicas: 1, Metrics: &v1.MetricsStatus{Nodes: 3},
		Extenders: []v1.ExtenderStatus{{Name: "extender"}}, Descheduling: &v1.DeschedulingStatus{Deployment: "ns/d"},
		PluginController: &v1.PluginControllerStatus{Deployment: "ns/p"}, Gang: &v1.GangStatus{Plugin: "Coscheduling"}}
	conditions := NewConditions(cr, status)
	for _, conditionType := range []v1.ConditionType{v1.ConditionMetricsAvailable, v1.ConditionExtendersAvailable, v1.ConditionDescheduling} {
		conditions.Set(conditionType, true, v1.ReasonAsExpected, "was true")
	}
	Removed(conditions, status, "removed")
	want := &v1.SecondarySchedulerStatus{}
	if diff := cmp.Diff(want, status, cmpopts.IgnoreFields(v1.SecondarySchedulerStatus{}, "Conditions")); diff != "" {
		t.Errorf("status of a removed scheduler (-want +got):\n%s", diff)
	}
	for _, condition := range status.Conditions {
		if condition.Reason != string(v1.ReasonRemoved) || condition.Status != metav1.ConditionFalse {
			t.Errorf("condition %s = %s, %s; want False, Removed", condition.Type, condition.Status, condition.Reason)
		}
	}
}
