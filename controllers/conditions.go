package controllers

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
)

// conditionSetter sets conditions on a status with the resource's generation.
type conditionSetter struct {
	generation int64
	status     *v1.SecondarySchedulerStatus
}

func newConditionSetter(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) *conditionSetter {
	return &conditionSetter{generation: cr.Generation, status: status}
}

func (c *conditionSetter) set(conditionType v1.ConditionType, isTrue bool, reason v1.ConditionReason, message string) {
	status := metav1.ConditionFalse
	if isTrue {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&c.status.Conditions, metav1.Condition{
		Type:               string(conditionType),
		Status:             status,
		Reason:             string(reason),
		Message:            message,
		ObservedGeneration: c.generation,
	})
}

// setUnknown sets a condition Unknown: what it reports has not been observed yet.
func (c *conditionSetter) setUnknown(conditionType v1.ConditionType, reason v1.ConditionReason, message string) {
	meta.SetStatusCondition(&c.status.Conditions, metav1.Condition{
		Type:               string(conditionType),
		Status:             metav1.ConditionUnknown,
		Reason:             string(reason),
		Message:            message,
		ObservedGeneration: c.generation,
	})
}

// setAll sets every condition False with one reason, for management states in which
// the operator does not run a scheduler.
func (c *conditionSetter) setAll(reason v1.ConditionReason, message string) {
	for _, conditionType := range []v1.ConditionType{v1.ConditionAvailable, v1.ConditionProgressing, v1.ConditionDegraded} {
		c.set(conditionType, false, reason, message)
	}
}

// setProgressing reports whether the Deployment still rolls out.
func setProgressing(conditions *conditionSetter, deployment *appsv1.Deployment) {
	if deployment == nil {
		conditions.set(v1.ConditionProgressing, false, v1.ReasonSchedulerNotDeployed, "the scheduler has not been deployed")
		return
	}
	want := ptrValue(deployment.Spec.Replicas)
	s := deployment.Status
	if deployment.Generation != s.ObservedGeneration || s.UpdatedReplicas < want || s.Replicas > s.UpdatedReplicas || s.AvailableReplicas < want {
		conditions.set(v1.ConditionProgressing, true, v1.ReasonRollingOut, fmt.Sprintf(
			"rolling out the current configuration: %d of %d pods updated, %d available, %d old pods left",
			s.UpdatedReplicas, want, s.AvailableReplicas, max(s.Replicas-s.UpdatedReplicas, 0)))
		return
	}
	conditions.set(v1.ConditionProgressing, false, v1.ReasonRolloutComplete, fmt.Sprintf("all %d scheduler pods run the current configuration", want))
}

// setDegraded sets Degraded for a scheduler that was applied: True with the foremost of
// the problems found (internal/reasons ranks them, whatever the order they were found
// in), False when none was.
func setDegraded(conditions *conditionSetter, problems ...*reasons.Finding) {
	if problem := reasons.Foremost(problems...); problem != nil {
		conditions.set(v1.ConditionDegraded, true, problem.Reason, problem.Message)
		return
	}
	conditions.set(v1.ConditionDegraded, false, v1.ReasonAsExpected, "the scheduler is configured as specified")
}

// rolloutStalled is the problem of a Deployment past its progress deadline, nil for one
// that progresses (or none).
func rolloutStalled(deployment *appsv1.Deployment) *reasons.Finding {
	if deployment == nil {
		return nil
	}
	for _, condition := range deployment.Status.Conditions {
		if condition.Type == appsv1.DeploymentProgressing && condition.Reason == "ProgressDeadlineExceeded" {
			return &reasons.Finding{Reason: v1.ReasonRolloutStalled, Message: fmt.Sprintf(
				"the scheduler's Deployment %s/%s stopped progressing: %s; look at its pods' events and logs",
				deployment.Namespace, deployment.Name, condition.Message)}
		}
	}
	return nil
}

// appendToMessage adds a sentence to the message of a condition already set.
func (c *conditionSetter) appendToMessage(conditionType v1.ConditionType, sentence string) {
	if condition := meta.FindStatusCondition(c.status.Conditions, string(conditionType)); condition != nil {
		condition.Message += ". " + sentence
	}
}

// changedConditions are the conditions of after whose status or reason differ from before.
func changedConditions(before, after []metav1.Condition) []metav1.Condition {
	var changed []metav1.Condition
	for _, condition := range after {
		previous := meta.FindStatusCondition(before, condition.Type)
		if previous == nil || previous.Status != condition.Status || previous.Reason != condition.Reason {
			changed = append(changed, condition)
		}
	}
	return changed
}

// setReconcilingAndStalled derives the kstatus conditions from the others, so that
// kubectl wait, Flux and every kstatus reader see what Available, Progressing and
// Degraded say: Stalled when the operator cannot progress without a change from the user
// (Degraded), else Reconciling while the scheduler is not yet what the generation asks
// for (rolling out, no ready pod of the current configuration, no leader).
func setReconcilingAndStalled(conditions *conditionSetter, status *v1.SecondarySchedulerStatus) {
	find := func(conditionType v1.ConditionType) *metav1.Condition {
		return meta.FindStatusCondition(status.Conditions, string(conditionType))
	}
	degraded, available, progressing := find(v1.ConditionDegraded), find(v1.ConditionAvailable), find(v1.ConditionProgressing)
	stalled := degraded != nil && degraded.Status == metav1.ConditionTrue
	if stalled {
		conditions.set(v1.ConditionStalled, true, v1.ConditionReason(degraded.Reason), degraded.Message)
		conditions.set(v1.ConditionReconciling, false, v1.ConditionReason(degraded.Reason), "the operator waits for the problem in the Stalled condition to be fixed")
		return
	}
	conditions.set(v1.ConditionStalled, false, v1.ReasonAsExpected, "nothing keeps the operator from reaching the desired state")
	// Unmanaged and Removed ask nothing more of the operator, whatever runs.
	leftAlone := progressing != nil && (progressing.Reason == string(v1.ReasonRemoved) || progressing.Reason == string(v1.ReasonUnmanaged))
	switch {
	case progressing != nil && progressing.Status == metav1.ConditionTrue:
		conditions.set(v1.ConditionReconciling, true, v1.ConditionReason(progressing.Reason), progressing.Message)
	case leftAlone:
		conditions.set(v1.ConditionReconciling, false, v1.ConditionReason(progressing.Reason), progressing.Message)
	case available != nil && available.Status != metav1.ConditionTrue:
		conditions.set(v1.ConditionReconciling, true, v1.ConditionReason(available.Reason), available.Message)
	default:
		conditions.set(v1.ConditionReconciling, false, v1.ReasonReconciled, "the scheduler runs the current generation as specified")
	}
}
