// Package reasons declares every reason the operator gives in a SecondaryScheduler's
// conditions and Events, once: the conditions it may be the reason of, whether it asks
// for someone's attention (its Events are Warnings), whether it keeps a load-aware
// scheduler from its metrics, and where it ranks when several problems of a running
// scheduler compete for Degraded. The controllers read all of that from here; adding a
// reason is its constant in api/v1, its entry in table and its row in docs/troubleshooting.md
// (a test fails when one of the three is missing).
package reasons

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Severity says whether a reason asks for someone's attention, as an Event's type does.
type Severity string

const (
	// Normal reasons tell how things are or go.
	Normal Severity = "Normal"
	// Warning reasons ask someone to act (or to know that something is wrong).
	Warning Severity = "Warning"
)

// Reason is what the operator declares of one reason.
type Reason struct {
	Name v1.ConditionReason
	// Conditions are the conditions it may be the reason of; none for a reason of Events
	// only.
	Conditions []v1.ConditionType
	// Severity is whether a condition in its problem status (Available False, Degraded
	// True) with this reason is a problem (IsProblem), told by a Warning Event.
	Severity Severity
	// Metrics marks a refusal that keeps a load-aware scheduler from its metrics: it is
	// reported as MetricsAvailable False too, and looked at again every probe interval.
	Metrics bool
	// Polled marks a refusal for a state that no watch of the operator reports the end
	// of (someone else's object holding a name, a CustomResourceDefinition not served):
	// it is looked at again, less often the longer it lasts.
	Polled bool
}

var (
	available        = []v1.ConditionType{v1.ConditionAvailable}
	progressing      = []v1.ConditionType{v1.ConditionProgressing}
	degraded         = []v1.ConditionType{v1.ConditionDegraded}
	metricsAvailable = []v1.ConditionType{v1.ConditionMetricsAvailable}
	// unavailableMetrics: a probe's finding, reported by MetricsAvailable and Degraded.
	unavailableMetrics = []v1.ConditionType{v1.ConditionMetricsAvailable, v1.ConditionDegraded}
	// podProblem: a pod of the current configuration says why it is not ready.
	podProblem   = []v1.ConditionType{v1.ConditionAvailable, v1.ConditionDegraded}
	podsPending  = []v1.ConditionType{v1.ConditionPodsPending}
	routed       = []v1.ConditionType{v1.ConditionRouting}
	descheduling = []v1.ConditionType{v1.ConditionDescheduling}
	// extenderProblem: a probe's finding about an extender that the scheduler cannot do
	// without, reported by ExtendersAvailable and Degraded.
	extenderProblem    = []v1.ConditionType{v1.ConditionExtendersAvailable, v1.ConditionDegraded}
	extendersAvailable = []v1.ConditionType{v1.ConditionExtendersAvailable}
	// checked: what the operator checks of a configuration it applies (metrics,
	// extenders, descheduler), Unknown while it applies none.
	checked = []v1.ConditionType{v1.ConditionMetricsAvailable, v1.ConditionExtendersAvailable, v1.ConditionDescheduling}
	// everyCondition: a state in which the operator runs no scheduler.
	everyCondition = []v1.ConditionType{v1.ConditionAvailable, v1.ConditionProgressing, v1.ConditionDegraded,
		v1.ConditionReconciling, v1.ConditionStalled}
)

// table holds every reason, in order of precedence: when several problems of a scheduler
// that was applied compete for Degraded, the one listed first is reported (nodes for the
// scheduler before its metrics, its metrics before its pods, its pods before a stalled
// rollout: without a node nothing else matters, and a scheduler blind to load is worse
// than one still rolling out). Refusals never compete: nothing is applied after one.
var table = []Reason{
	// What the nodes keep a running scheduler from doing.
	{Name: v1.ReasonNoSchedulableNodes, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonNodePoolEmpty, Conditions: []v1.ConditionType{v1.ConditionDegraded, v1.ConditionPodsPending}, Severity: Warning},

	// An extender that is not ignorable and that the scheduler cannot reach fails every
	// pod it is called for.
	{Name: v1.ReasonExtenderUnreachable, Conditions: extenderProblem, Severity: Warning},
	{Name: v1.ReasonExtenderTLSFailed, Conditions: extenderProblem, Severity: Warning},
	{Name: v1.ReasonExtenderNotReady, Conditions: extenderProblem, Severity: Warning},

	// What a probe of a load-aware scheduler's metrics found, and the failsafe.
	{Name: v1.ReasonMetricsStale, Conditions: unavailableMetrics, Severity: Warning},
	{Name: v1.ReasonPrometheusUnreachable, Conditions: unavailableMetrics, Severity: Warning},
	{Name: v1.ReasonUnauthorized, Conditions: unavailableMetrics, Severity: Warning},
	{Name: v1.ReasonRecordingRuleMissing, Conditions: unavailableMetrics, Severity: Warning},
	{Name: v1.ReasonNodeLabelMismatch, Conditions: unavailableMetrics, Severity: Warning},
	{Name: v1.ReasonRecordingRulesNotInstalled, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonScoringByRequests, Conditions: degraded, Severity: Warning},

	// Why no pod of the current configuration is ready, the surest need to act first.
	{Name: v1.ReasonImagePullFailed, Conditions: podProblem, Severity: Warning},
	{Name: v1.ReasonSchedulerCannotStart, Conditions: podProblem, Severity: Warning},
	{Name: v1.ReasonSchedulerCrashing, Conditions: podProblem, Severity: Warning},
	{Name: v1.ReasonSchedulerUnschedulable, Conditions: podProblem, Severity: Warning},
	// The Deployment's own account, when no pod says more.
	{Name: v1.ReasonPodCreationFailed, Conditions: podProblem, Severity: Warning},
	{Name: v1.ReasonRolloutStalled, Conditions: degraded, Severity: Warning},

	// Refusals: the desired scheduler is not applied, the last good one keeps running.
	{Name: v1.ReasonNamespaceNotAllowed, Conditions: everyCondition, Severity: Warning},
	{Name: v1.ReasonAdmissionPolicyMissing, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonImageNotAllowed, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonCreatedBeforeAdmissionPolicy, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonInvalidImage, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonInvalidSpec, Conditions: []v1.ConditionType{v1.ConditionDegraded, v1.ConditionRouting}, Severity: Warning},
	{Name: v1.ReasonConfigMapNotFound, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonConfigKeyMissing, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonConfigTooLarge, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonConfigNotYAML, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonNotKubeSchedulerConfiguration, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonUnsupportedConfigVersion, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonInvalidConfig, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonNoProfile, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonProfileNotFound, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonDefaultSchedulerClaimed, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonSchedulerNameConflict, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonPriorityClassNotFound, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonPluginsNotInImage, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonPluginCRDMissing, Conditions: degraded, Severity: Warning, Polled: true},
	{Name: v1.ReasonDeschedulingFightsScheduler, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonDeschedulerCannotReadPrometheus, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonWorkloadAPIMissing, Conditions: degraded, Severity: Warning, Polled: true},
	{Name: v1.ReasonDiscoveryFailed, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonClusterRoleNotAllowed, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonObjectNameTaken, Conditions: degraded, Severity: Warning, Polled: true},
	{Name: v1.ReasonApplyFailed, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonPrometheusNotFound, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonMetricsAddressInvalid, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonTokenSecretNotFound, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonTokenKeyMissing, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonTokenRequestFailed, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonCABundleNotFound, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonCABundleInvalid, Conditions: unavailableMetrics, Severity: Warning, Metrics: true},
	{Name: v1.ReasonInvalidExtender, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonExtenderSecretNotFound, Conditions: degraded, Severity: Warning},
	{Name: v1.ReasonExtenderCertificateInvalid, Conditions: degraded, Severity: Warning},

	// How a scheduler without a problem is, or gets there.
	{Name: v1.ReasonNoReadyScheduler, Conditions: available, Severity: Warning},
	{Name: v1.ReasonSchedulerNotDeployed, Conditions: []v1.ConditionType{v1.ConditionAvailable, v1.ConditionProgressing}, Severity: Normal},
	{Name: v1.ReasonNoLeader, Conditions: available, Severity: Normal},
	{Name: v1.ReasonHandingOver, Conditions: progressing, Severity: Normal},
	{Name: v1.ReasonSchedulerReady, Conditions: available, Severity: Normal},
	{Name: v1.ReasonServingPreviousConfiguration, Conditions: available, Severity: Normal},
	{Name: v1.ReasonRollingOut, Conditions: progressing, Severity: Normal},
	{Name: v1.ReasonRolloutComplete, Conditions: progressing, Severity: Normal},
	{Name: v1.ReasonMetricsProbing, Conditions: metricsAvailable, Severity: Normal},
	{Name: v1.ReasonNotChecked, Conditions: checked, Severity: Normal},
	{Name: v1.ReasonMetricsAvailable, Conditions: metricsAvailable, Severity: Normal},
	{Name: v1.ReasonAsExpected, Conditions: []v1.ConditionType{v1.ConditionDegraded, v1.ConditionStalled}, Severity: Normal},
	{Name: v1.ReasonReconciled, Conditions: []v1.ConditionType{v1.ConditionReconciling}, Severity: Normal},
	{Name: v1.ReasonUnmanaged, Conditions: everyCondition, Severity: Normal},
	{Name: v1.ReasonRemoved, Conditions: everyCondition, Severity: Normal},

	// Pods waiting for the scheduler longer than spec.pendingPodThreshold, and why.
	{Name: v1.ReasonSchedulerNotRunning, Conditions: podsPending, Severity: Warning},
	{Name: v1.ReasonPodsUnschedulable, Conditions: podsPending, Severity: Warning},
	{Name: v1.ReasonPodsNotScheduled, Conditions: podsPending, Severity: Warning},
	{Name: v1.ReasonGangWaiting, Conditions: podsPending, Severity: Warning},
	{Name: v1.ReasonQuotaExceeded, Conditions: podsPending, Severity: Warning},
	{Name: v1.ReasonNoPodsPending, Conditions: podsPending, Severity: Normal},

	// Whether the descheduler of spec.descheduling runs, and why not.
	{Name: v1.ReasonDeschedulerReady, Conditions: descheduling, Severity: Normal},
	{Name: v1.ReasonDeschedulerDryRun, Conditions: descheduling, Severity: Normal},
	{Name: v1.ReasonDeschedulerNotReady, Conditions: descheduling, Severity: Warning},
	{Name: v1.ReasonDeschedulerRollingOut, Conditions: descheduling, Severity: Normal},
	{Name: v1.ReasonDeschedulerPaused, Conditions: descheduling, Severity: Normal},
	{Name: v1.ReasonSchedulerNamePolicyMissing, Conditions: descheduling, Severity: Warning},

	// Whether new pods are routed to the scheduler (spec.routing), and why not.
	{Name: v1.ReasonRouted, Conditions: routed, Severity: Normal},
	{Name: v1.ReasonAuditing, Conditions: routed, Severity: Normal},
	{Name: v1.ReasonRoutingPolicyPending, Conditions: routed, Severity: Normal},
	{Name: v1.ReasonRoutingPolicyMissing, Conditions: routed, Severity: Warning},
	{Name: v1.ReasonFailedOver, Conditions: routed, Severity: Warning},
	{Name: v1.ReasonSchedulerNotAvailable, Conditions: routed, Severity: Normal},
	{Name: v1.ReasonRoutingConflict, Conditions: routed, Severity: Warning},
	{Name: v1.ReasonRoutingUnsupported, Conditions: routed, Severity: Warning},
	{Name: v1.ReasonNotRouting, Conditions: routed, Severity: Normal},

	// Whether the scheduler's extenders answer (spec.extenders, a Custom configuration's).
	{Name: v1.ReasonExtendersReachable, Conditions: extendersAvailable, Severity: Normal},
	{Name: v1.ReasonExtendersProbing, Conditions: extendersAvailable, Severity: Normal},
	{Name: v1.ReasonIgnorableExtenderUnreachable, Conditions: extendersAvailable, Severity: Warning},

	// Reasons of Events only.
	{Name: v1.ReasonImageVersionSkew, Severity: Warning},
	{Name: v1.ReasonEditUndone, Severity: Warning},
	{Name: v1.ReasonLoadAwareScoringResumed, Severity: Normal},
	{Name: v1.ReasonSchedulerNotProvided, Severity: Warning},
}

// All is every reason, in order of precedence.
func All() []Reason { return slices.Clone(table) }

// Of is what the table declares of name; ok is false for a reason it lacks.
func Of(name v1.ConditionReason) (reason Reason, ok bool) {
	index := rank(name)
	if index == len(table) {
		return Reason{Name: name, Severity: Warning}, false
	}
	return table[index], true
}

// rank is name's place in the table, len(table) for a reason it lacks (ranked last).
func rank(name v1.ConditionReason) int {
	index := slices.IndexFunc(table, func(reason Reason) bool { return reason.Name == name })
	if index < 0 {
		return len(table)
	}
	return index
}

// Finding is a reason with its message: a problem one stage found.
type Finding struct {
	Reason  v1.ConditionReason
	Message string
}

// Foremost is the finding of highest precedence among findings, nil ones skipped; nil
// when there is none. Of two with the same reason, the first given wins.
func Foremost(findings ...*Finding) *Finding {
	var foremost *Finding
	for _, finding := range findings {
		if finding != nil && (foremost == nil || rank(finding.Reason) < rank(foremost.Reason)) {
			foremost = finding
		}
	}
	return foremost
}

// KeepsFromMetrics reports whether a refusal for name keeps a load-aware scheduler from
// its metrics.
func KeepsFromMetrics(name v1.ConditionReason) bool {
	reason, _ := Of(name)
	return reason.Metrics
}

// IsPolled reports whether name is a refusal looked at again without an event (Polled).
func IsPolled(name v1.ConditionReason) bool {
	reason, _ := Of(name)
	return reason.Polled
}

// conditionKind is what the operator declares of one condition type for telling its
// changes.
type conditionKind struct {
	// problemStatus is the status in which the condition tells a problem, with a reason of
	// severity Warning; empty for a condition that tells work under way, never a problem.
	problemStatus metav1.ConditionStatus
	// startsThere: a new scheduler reports the condition in problemStatus, with a Warning
	// reason, before its first pod is ready (Available False, NoReadyScheduler), so its first
	// report goes without saying; what else it could tell then, Degraded tells too.
	startsThere bool
}

// conditionKinds holds every condition type of api/v1 (a test fails when one is missing).
var conditionKinds = map[v1.ConditionType]conditionKind{
	v1.ConditionAvailable:          {problemStatus: metav1.ConditionFalse, startsThere: true},
	v1.ConditionMetricsAvailable:   {problemStatus: metav1.ConditionFalse},
	v1.ConditionExtendersAvailable: {problemStatus: metav1.ConditionFalse},
	v1.ConditionRouting:            {problemStatus: metav1.ConditionFalse},
	v1.ConditionDescheduling:       {problemStatus: metav1.ConditionFalse},
	v1.ConditionDegraded:           {problemStatus: metav1.ConditionTrue},
	v1.ConditionPodsPending:        {problemStatus: metav1.ConditionTrue},
	v1.ConditionStalled:            {problemStatus: metav1.ConditionTrue},
	v1.ConditionProgressing:        {},
	v1.ConditionReconciling:        {},
}

// IsProblem reports whether condition asks for someone's attention: it is in the status in
// which its type tells a problem (Available, MetricsAvailable, ExtendersAvailable and
// Routing False; Degraded, PodsPending and Stalled True; Progressing and Reconciling never)
// with a reason of severity Warning, or one the table lacks. Its Event is a Warning.
func IsProblem(condition metav1.Condition) bool {
	kind, ok := conditionKinds[v1.ConditionType(condition.Type)]
	if !ok || kind.problemStatus == "" || condition.Status != kind.problemStatus {
		return false
	}
	reason, _ := Of(v1.ConditionReason(condition.Reason))
	return reason.Severity == Warning
}

// TellsFirstReport reports whether the first report of condition (the status had none of
// its type) is worth an Event: only a problem is, and not the one every new scheduler
// starts with. That a new scheduler is not available yet and rolls out goes without saying,
// and would be thousands of Events for hundreds of schedulers created at once.
func TellsFirstReport(condition metav1.Condition) bool {
	return IsProblem(condition) && !conditionKinds[v1.ConditionType(condition.Type)].startsThere
}

// EventType is the type of the Event that tells condition's change: Warning for a
// problem (IsProblem), Normal otherwise.
func EventType(condition metav1.Condition) string {
	if IsProblem(condition) {
		return string(Warning)
	}
	return string(Normal)
}
