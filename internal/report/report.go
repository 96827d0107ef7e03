// Package report derives what a SecondaryScheduler's status reports from what the stages
// of a reconcile found: the refusal, the facts gathered, the Deployment applied and what
// runs. It is pure: its functions set conditions on a status value, which the controller
// writes once, and it can reach no writer (TestReportingCannotWrite).
package report

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// Conditions sets conditions on a status with the resource's generation.
type Conditions struct {
	generation int64
	status     *v1.SecondarySchedulerStatus
}

// NewConditions sets conditions on status for cr's generation.
func NewConditions(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) *Conditions {
	return &Conditions{generation: cr.Generation, status: status}
}

// Set sets a condition True or False.
func (c *Conditions) Set(conditionType v1.ConditionType, isTrue bool, reason v1.ConditionReason, message string) {
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

// SetUnknown sets a condition Unknown: what it reports has not been observed yet.
func (c *Conditions) SetUnknown(conditionType v1.ConditionType, reason v1.ConditionReason, message string) {
	meta.SetStatusCondition(&c.status.Conditions, metav1.Condition{
		Type:               string(conditionType),
		Status:             metav1.ConditionUnknown,
		Reason:             string(reason),
		Message:            message,
		ObservedGeneration: c.generation,
	})
}

// SetAll sets every condition False with one reason, for management states in which
// the operator does not run a scheduler.
func (c *Conditions) SetAll(reason v1.ConditionReason, message string) {
	for _, conditionType := range []v1.ConditionType{v1.ConditionAvailable, v1.ConditionProgressing, v1.ConditionDegraded} {
		c.Set(conditionType, false, reason, message)
	}
}

// Progressing reports whether the current configuration still rolls out: while the
// Deployment does, and while a pod of an earlier configuration leads (seen.NotInEffect).
// So Progressing, and Reconciling after it, are False only once the current
// configuration schedules.
func Progressing(conditions *Conditions, seen Availability) {
	deployment := seen.Deployment
	if deployment == nil {
		conditions.Set(v1.ConditionProgressing, false, v1.ReasonSchedulerNotDeployed, "the scheduler has not been deployed")
		return
	}
	want := ptrValue(deployment.Spec.Replicas)
	s := deployment.Status
	if !observe.StatusOfCurrentTemplate(deployment) {
		// Its counts are of the template before: "1 of 1 pods updated" would be untrue.
		conditions.Set(v1.ConditionProgressing, true, v1.ReasonRollingOut, fmt.Sprintf(
			"rolling out the current configuration: the Deployment controller has not acted on it yet (Deployment %s/%s at generation %d, its status of generation %d)",
			deployment.Namespace, deployment.Name, deployment.Generation, s.ObservedGeneration))
		return
	}
	if s.UpdatedReplicas < want || s.Replicas > s.UpdatedReplicas || s.AvailableReplicas < want {
		conditions.Set(v1.ConditionProgressing, true, v1.ReasonRollingOut, fmt.Sprintf(
			"rolling out the current configuration: %d of %d pods updated, %d available, %d old pods left",
			s.UpdatedReplicas, want, s.AvailableReplicas, max(s.Replicas-s.UpdatedReplicas, 0)))
		return
	}
	if seen.NotInEffect != nil {
		conditions.Set(v1.ConditionProgressing, true, seen.NotInEffect.Reason, seen.NotInEffect.Message)
		return
	}
	conditions.Set(v1.ConditionProgressing, false, v1.ReasonRolloutComplete, fmt.Sprintf("all %d scheduler pods run the current configuration", want))
}

// Degraded sets Degraded for a scheduler that was applied: True with the foremost of
// the problems found (internal/reasons ranks them, whatever the order they were found
// in), False when none was.
func Degraded(conditions *Conditions, problems ...*reasons.Finding) {
	if problem := reasons.Foremost(problems...); problem != nil {
		conditions.Set(v1.ConditionDegraded, true, problem.Reason, problem.Message)
		return
	}
	conditions.Set(v1.ConditionDegraded, false, v1.ReasonAsExpected, "the scheduler is configured as specified")
}

// RolloutStalled is the problem of a Deployment past its progress deadline, nil for one
// that progresses (or none).
func RolloutStalled(deployment *appsv1.Deployment) *reasons.Finding {
	// A status of an earlier generation says how the template before went: an edit that
	// fixes a stalled rollout is not stalled itself.
	if deployment == nil || !observe.StatusOfCurrentTemplate(deployment) {
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

// AppendToMessage adds a sentence to the message of a condition already set.
func (c *Conditions) AppendToMessage(conditionType v1.ConditionType, sentence string) {
	if condition := meta.FindStatusCondition(c.status.Conditions, string(conditionType)); condition != nil {
		condition.Message += ". " + sentence
	}
}

// Changed are the conditions of after whose status or reason differ from before.
func Changed(before, after []metav1.Condition) []metav1.Condition {
	var changed []metav1.Condition
	for _, condition := range after {
		previous := meta.FindStatusCondition(before, condition.Type)
		if previous == nil || previous.Status != condition.Status || previous.Reason != condition.Reason {
			changed = append(changed, condition)
		}
	}
	return changed
}

// ReconcilingAndStalled derives the kstatus conditions from the others, so that
// kubectl wait, Flux and every kstatus reader see what Available, Progressing and
// Degraded say: Stalled when the operator cannot progress without a change from the user
// (Degraded), else Reconciling while the scheduler is not yet what the generation asks
// for (rolling out, no ready pod of the current configuration, no leader).
func ReconcilingAndStalled(conditions *Conditions, status *v1.SecondarySchedulerStatus) {
	find := func(conditionType v1.ConditionType) *metav1.Condition {
		return meta.FindStatusCondition(status.Conditions, string(conditionType))
	}
	degraded, available, progressing := find(v1.ConditionDegraded), find(v1.ConditionAvailable), find(v1.ConditionProgressing)
	stalled := degraded != nil && degraded.Status == metav1.ConditionTrue
	if stalled {
		conditions.Set(v1.ConditionStalled, true, v1.ConditionReason(degraded.Reason), degraded.Message)
		conditions.Set(v1.ConditionReconciling, false, v1.ConditionReason(degraded.Reason), "the operator waits for the problem in the Stalled condition to be fixed")
		return
	}
	conditions.Set(v1.ConditionStalled, false, v1.ReasonAsExpected, "nothing keeps the operator from reaching the desired state")
	// Unmanaged and Removed ask nothing more of the operator, whatever runs.
	leftAlone := progressing != nil && (progressing.Reason == string(v1.ReasonRemoved) || progressing.Reason == string(v1.ReasonUnmanaged))
	switch {
	case progressing != nil && progressing.Status == metav1.ConditionTrue:
		conditions.Set(v1.ConditionReconciling, true, v1.ConditionReason(progressing.Reason), progressing.Message)
	case leftAlone:
		conditions.Set(v1.ConditionReconciling, false, v1.ConditionReason(progressing.Reason), progressing.Message)
	case available != nil && available.Status != metav1.ConditionTrue:
		conditions.Set(v1.ConditionReconciling, true, v1.ConditionReason(available.Reason), available.Message)
	default:
		conditions.Set(v1.ConditionReconciling, false, v1.ReasonReconciled, "the scheduler runs the current generation as specified")
	}
}

// Refused reports a refusal: Degraded with its reason and message, MetricsAvailable too
// for one that keeps a load-aware scheduler from its metrics. It returns whether what
// runs is still to be observed: not in a namespace where no scheduler may run, where the
// operator may not read and all conditions say so.
func Refused(conditions *Conditions, status *v1.SecondarySchedulerStatus, refused *refusal.Error) bool {
	// The metrics' own problem, when one of the refusals joined is one, whether or not
	// it came first: MetricsAvailable says it, and only the others are not checked.
	var metricsProblem *refusal.Error
	for _, problem := range append([]*refusal.Error{refused}, refused.Also...) {
		if reasons.KeepsFromMetrics(problem.Reason) {
			metricsProblem = problem
			break
		}
	}
	var reported []v1.ConditionType
	if metricsProblem != nil {
		conditions.Set(v1.ConditionMetricsAvailable, false, metricsProblem.Reason, metricsProblem.OwnMessage())
		if metricsProblem.Reason == v1.ReasonPrometheusNotFound {
			status.Metrics = nil
		}
		reported = append(reported, v1.ConditionMetricsAvailable)
	}
	NotChecked(conditions, status, "the spec is refused (Degraded says why), so the operator applies nothing and checks "+
		"nothing of the configuration the scheduler keeps running with", reported...)
	if refused.Reason == v1.ReasonNamespaceNotAllowed {
		conditions.Set(v1.ConditionAvailable, false, refused.Reason, refused.Message)
		conditions.Set(v1.ConditionProgressing, false, refused.Reason, refused.Message)
		conditions.Set(v1.ConditionDegraded, true, refused.Reason, refused.Message)
		return false
	}
	conditions.Set(v1.ConditionDegraded, true, refused.Reason, refused.Message+runningNote(status))
	return true
}

// Removed reports a scheduler that managementState Removed deleted: every condition
// False for that reason, and nothing of what ran (replicas, node pool, metrics, extenders,
// descheduler, plugin controller, gang) left to claim it still does.
func Removed(conditions *Conditions, status *v1.SecondarySchedulerStatus, message string) {
	status.ReadyReplicas, status.Replicas, status.NodePool = 0, 0, nil
	status.Metrics, status.Extenders, status.Descheduling, status.PluginController, status.Gang = nil, nil, nil, nil, nil
	notChecked, _ := reasons.Of(v1.ReasonNotChecked)
	for _, conditionType := range notChecked.Conditions {
		meta.RemoveStatusCondition(&status.Conditions, string(conditionType))
	}
	conditions.SetAll(v1.ReasonRemoved, message)
}

// lastCheck begins the part of a NotChecked message that says what the last check found.
const lastCheck = " When last checked"

// NotChecked sets Unknown, with reason NotChecked and why, those conditions of status
// that report what the operator checks of a configuration it applies (its metrics,
// extenders, descheduler: the conditions reason NotChecked may be the reason of), for a
// reconcile that applies none: a True left from an earlier check would claim health no
// one has observed since. Each message keeps what the last check found, and for which
// generation; status.metrics, status.extenders and status.descheduling keep that check's
// figures, as the message says. Conditions in reported are left alone: the caller reports
// them (a refusal that is the metrics' own problem), and turning one Unknown on the way
// would move its transition time on every reconcile.
func NotChecked(conditions *Conditions, status *v1.SecondarySchedulerStatus, why string, reported ...v1.ConditionType) {
	notChecked, _ := reasons.Of(v1.ReasonNotChecked)
	for _, conditionType := range notChecked.Conditions {
		condition := meta.FindStatusCondition(status.Conditions, string(conditionType))
		if condition == nil || slices.Contains(reported, conditionType) {
			continue
		}
		found := fmt.Sprintf("%s, for generation %d: %s, %s: %s. Its figures in status are of that check.",
			lastCheck, condition.ObservedGeneration, condition.Status, condition.Reason, strings.TrimSuffix(condition.Message, "."))
		if condition.Reason == string(v1.ReasonNotChecked) {
			if at := strings.Index(condition.Message, lastCheck); at >= 0 {
				found = condition.Message[at:]
			}
		}
		conditions.SetUnknown(conditionType, v1.ReasonNotChecked, "Not checked: "+why+"."+found)
	}
}

// runningNote tells, after a refusal, that the last good scheduler still runs.
func runningNote(status *v1.SecondarySchedulerStatus) string {
	if status.ConfigHash == "" {
		return ""
	}
	return fmt.Sprintf(" The scheduler keeps running with its last good configuration (hash %s) until this is fixed.", status.ConfigHash)
}
