package report

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
)

// READY and AVAILABLE come from the same moment: the pods seen, not the Deployment's
// status, which its controller updates a sync later.
func TestReadyReplicasAgreeWithAvailable(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer", Generation: 1}}
	lagging := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 0}}
	tests := []struct {
		name          string
		seen          observe.Scheduler
		wantReady     int32
		wantAvailable metav1.ConditionStatus
	}{
		{name: "a ready pod leading, the Deployment not updated yet",
			seen:      observe.Scheduler{Deployment: lagging, Current: 1, CurrentNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_1234"},
			wantReady: 1, wantAvailable: metav1.ConditionTrue},
		{name: "a ready pod of the current template and one of the old, the Deployment not updated yet",
			seen:      observe.Scheduler{Deployment: lagging, Current: 1, Old: 1, CurrentNames: []string{"packer-scheduler-b"}, LeaseHolder: "packer-scheduler-b_1"},
			wantReady: 2, wantAvailable: metav1.ConditionTrue},
		{name: "its only ready pod is being deleted and still leads",
			seen:      observe.Scheduler{Deployment: lagging, StoppingCurrentNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_1234"},
			wantReady: 1, wantAvailable: metav1.ConditionTrue},
		{name: "no ready pod, the Deployment still counting one",
			seen:      observe.Scheduler{Deployment: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}},
			wantReady: 0, wantAvailable: metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1.SecondarySchedulerStatus{SchedulerName: "packer"}
			Available(cr, status, NewConditions(cr, status), tt.seen)
			available := meta.FindStatusCondition(status.Conditions, string(v1.ConditionAvailable))
			if available == nil || available.Status != tt.wantAvailable || status.ReadyReplicas != tt.wantReady {
				t.Fatalf("readyReplicas %d, Available %v; want %d and %s", status.ReadyReplicas, available, tt.wantReady, tt.wantAvailable)
			}
			if len(tt.seen.StoppingCurrentNames) > 0 && !strings.Contains(available.Message, "packer-scheduler-a, a pod of the current configuration being deleted") {
				t.Errorf("Available's message %q does not say that its leader stops", available.Message)
			}
		})
	}
}

// Available says whether the scheduler serves its name, whatever configuration the pod
// that serves runs; Progressing and Degraded say how the current configuration goes.
// An edit whose pod cannot run leaves the earlier scheduler serving: Available stays True,
// the pod's problem goes to Degraded, and Progressing stays True.
func TestAvailableJudgesByTheSchedulerThatServes(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer", Generation: 2}}
	rolling := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 1}}
	rolledOut := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}}
	unschedulable := &reasons.Finding{Reason: v1.ReasonSchedulerUnschedulable, Message: "no node matches the pod's node selector"}
	tests := []struct {
		name            string
		seen            observe.Scheduler
		wantAvailable   string
		wantProgressing string
		wantProblem     v1.ConditionReason
	}{
		{name: "the new pod cannot be placed, the old one leads",
			seen: observe.Scheduler{Deployment: rolling, Old: 1, OldNames: []string{"packer-scheduler-old"},
				LeaseHolder: "packer-scheduler-old_77", Problem: unschedulable},
			wantAvailable: "True/ServingPreviousConfiguration", wantProgressing: "True/RollingOut", wantProblem: v1.ReasonSchedulerUnschedulable},
		{name: "the new pod starts, the old one leads",
			seen:          observe.Scheduler{Deployment: rolling, Old: 1, OldNames: []string{"packer-scheduler-old"}, LeaseHolder: "packer-scheduler-old_77"},
			wantAvailable: "True/ServingPreviousConfiguration", wantProgressing: "True/RollingOut"},
		{name: "the new pod is ready, the old one still leads",
			seen: observe.Scheduler{Deployment: rolledOut, Current: 1, CurrentNames: []string{"packer-scheduler-new"},
				Old: 1, OldNames: []string{"packer-scheduler-old"}, LeaseHolder: "packer-scheduler-old_77"},
			wantAvailable: "True/ServingPreviousConfiguration", wantProgressing: "True/HandingOver"},
		{name: "the Deployment counts the rollout done before the cache sees the new pod ready",
			seen:          observe.Scheduler{Deployment: rolledOut, Old: 1, OldNames: []string{"packer-scheduler-old"}, LeaseHolder: "packer-scheduler-old_77"},
			wantAvailable: "True/ServingPreviousConfiguration", wantProgressing: "True/RollingOut"},
		{name: "the old pod is being deleted and still leads",
			seen: observe.Scheduler{Deployment: rolledOut, Current: 1, CurrentNames: []string{"packer-scheduler-new"},
				StoppingOldNames: []string{"packer-scheduler-old"}, LeaseHolder: "packer-scheduler-old_77"},
			wantAvailable: "True/ServingPreviousConfiguration", wantProgressing: "True/HandingOver"},
		{name: "a pod of the current configuration being deleted still leads",
			seen: observe.Scheduler{Deployment: rolledOut, Current: 1, CurrentNames: []string{"packer-scheduler-b"},
				StoppingCurrentNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_77"},
			wantAvailable: "True/SchedulerReady", wantProgressing: "False/RolloutComplete"},
		{name: "the new pod leads",
			seen: observe.Scheduler{Deployment: rolledOut, Current: 1, CurrentNames: []string{"packer-scheduler-new"},
				LeaseHolder: "packer-scheduler-new_78"},
			wantAvailable: "True/SchedulerReady", wantProgressing: "False/RolloutComplete"},
		{name: "old pods ready, nobody leads",
			seen:          observe.Scheduler{Deployment: rolling, Old: 1, OldNames: []string{"packer-scheduler-old"}, Problem: unschedulable},
			wantAvailable: "False/SchedulerUnschedulable", wantProgressing: "True/RollingOut", wantProblem: v1.ReasonSchedulerUnschedulable},
		{name: "the Lease held by a pod that is gone",
			seen: observe.Scheduler{Deployment: rolledOut, Current: 1, CurrentNames: []string{"packer-scheduler-new"},
				LeaseHolder: "packer-scheduler-gone_1"},
			wantAvailable: "False/NoLeader", wantProgressing: "False/RolloutComplete"},
		{name: "a name that merely starts like the holder's",
			seen: observe.Scheduler{Deployment: rolledOut, Old: 1, OldNames: []string{"packer-scheduler-ol"},
				LeaseHolder: "packer-scheduler-old_77"},
			wantAvailable: "False/NoLeader", wantProgressing: "False/RolloutComplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1.SecondarySchedulerStatus{SchedulerName: "packer", ConfigHash: "abc"}
			conditions := NewConditions(cr, status)
			seen := Available(cr, status, conditions, tt.seen)
			Progressing(conditions, seen)
			Degraded(conditions, seen.PodProblem)
			if got := conditionOf(status, v1.ConditionAvailable); got != tt.wantAvailable {
				t.Errorf("Available %s, want %s", got, tt.wantAvailable)
			}
			if got := conditionOf(status, v1.ConditionProgressing); got != tt.wantProgressing {
				t.Errorf("Progressing %s, want %s", got, tt.wantProgressing)
			}
			wantDegraded := "False/" + string(v1.ReasonAsExpected)
			if tt.wantProblem != "" {
				wantDegraded = "True/" + string(tt.wantProblem)
			}
			if got := conditionOf(status, v1.ConditionDegraded); got != wantDegraded {
				t.Errorf("Degraded %s, want %s", got, wantDegraded)
			}
		})
	}
}

func conditionOf(status *v1.SecondarySchedulerStatus, conditionType v1.ConditionType) string {
	condition := meta.FindStatusCondition(status.Conditions, string(conditionType))
	if condition == nil {
		return "absent"
	}
	return string(condition.Status) + "/" + condition.Reason
}

// Progressing quotes the Deployment's counts only once its controller has seen the current
// template: until then they are of the template before, and say nothing of the rollout.
func TestProgressingQuotesOnlyCountsOfTheCurrentTemplate(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer", Generation: 2}}
	tests := []struct {
		name        string
		deployment  *appsv1.Deployment
		wantMessage string
	}{
		{name: "the template just applied, the status of the one before",
			deployment: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer-scheduler", Generation: 3},
				Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
				Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}},
			wantMessage: "rolling out the current configuration: the Deployment controller has not acted on it yet (Deployment platform/packer-scheduler at generation 3, its status of generation 2)"},
		{name: "the new pod starting",
			deployment: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer-scheduler", Generation: 3},
				Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
				Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 1}},
			wantMessage: "rolling out the current configuration: 1 of 1 pods updated, 1 available, 1 old pods left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1.SecondarySchedulerStatus{SchedulerName: "packer", ConfigHash: "abc"}
			conditions := NewConditions(cr, status)
			Progressing(conditions, Availability{Deployment: tt.deployment})
			progressing := meta.FindStatusCondition(status.Conditions, string(v1.ConditionProgressing))
			if progressing == nil || progressing.Reason != string(v1.ReasonRollingOut) || progressing.Message != tt.wantMessage {
				t.Fatalf("Progressing %+v, want RollingOut: %s", progressing, tt.wantMessage)
			}
		})
	}
}

// A rollout is stalled by its Deployment's own account of the current template, not by
// that of the template an edit replaced.
func TestRolloutStalledOnlyForTheCurrentTemplate(t *testing.T) {
	stalled := appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing,
		Status: "False", Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "packer-scheduler-7d9" has timed out progressing.`}}}
	current := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer-scheduler", Generation: 2}, Status: stalled}
	current.Status.ObservedGeneration = 2
	if finding := RolloutStalled(current); finding == nil || finding.Reason != v1.ReasonRolloutStalled {
		t.Errorf("the current template's rollout past its deadline: %+v, want RolloutStalled", finding)
	}
	edited := current.DeepCopy()
	edited.Generation = 3
	if finding := RolloutStalled(edited); finding != nil {
		t.Errorf("a new template the Deployment controller has not seen: %+v, want no finding", finding)
	}
}

// A pod that is not ready may still hold the Lease, and schedule while it renews it:
// readiness does not stop kube-scheduler from leading. Available is False (no ready pod
// leads), and says so, instead of claiming that none schedules or that pods stay Pending.
func TestAnUnreadyLeaderIsNotSaidToScheduleNothing(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer", Generation: 1}}
	one := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	two := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
	crashing := &reasons.Finding{Reason: v1.ReasonSchedulerCrashing, Message: "packer-scheduler-a restarts"}
	tests := []struct {
		name       string
		seen       observe.Scheduler
		wantReason v1.ConditionReason
	}{
		{name: "its only pod, not ready, leads",
			seen:       observe.Scheduler{Deployment: one, UnreadyNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_1"},
			wantReason: v1.ReasonNoReadyScheduler},
		{name: "its only pod, not ready and telling why, leads",
			seen: observe.Scheduler{Deployment: one, UnreadyNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_1",
				Problem: crashing},
			wantReason: v1.ReasonSchedulerCrashing},
		{name: "an old pod is ready, an unready one of the current template leads",
			seen: observe.Scheduler{Deployment: one, Old: 1, OldNames: []string{"packer-scheduler-old"},
				UnreadyNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_1"},
			wantReason: v1.ReasonNoLeader},
		{name: "a ready pod waits while an unready one leads",
			seen: observe.Scheduler{Deployment: two, Current: 1, CurrentNames: []string{"packer-scheduler-b"},
				UnreadyNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_1"},
			wantReason: v1.ReasonNoLeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1.SecondarySchedulerStatus{SchedulerName: "packer"}
			availability := Available(cr, status, NewConditions(cr, status), tt.seen)
			available := meta.FindStatusCondition(status.Conditions, string(v1.ConditionAvailable))
			if available == nil || available.Status != metav1.ConditionFalse || available.Reason != string(tt.wantReason) {
				t.Fatalf("Available = %+v, want False, %s", available, tt.wantReason)
			}
			if !strings.Contains(available.Message, "packer-scheduler-a") || !strings.Contains(available.Message, "not ready") ||
				!strings.Contains(available.Message, "may still place pods") {
				t.Errorf("Available's message %q does not say that the unready leader may still place pods", available.Message)
			}
			for _, claim := range []string{"none schedules", "stay Pending"} {
				if strings.Contains(available.Message, claim) {
					t.Errorf("Available's message %q claims %q, which an unready leader may belie", available.Message, claim)
				}
			}
			if availability.Leader != "" {
				t.Errorf("leader %q, want none: an unready pod is not judged as the scheduler that serves", availability.Leader)
			}
			if availability.RequeueAfter <= 0 {
				t.Errorf("requeue after %v; want a poll: the Lease's expiry changes nothing the operator watches", availability.RequeueAfter)
			}
		})
	}
}
