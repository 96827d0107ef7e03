package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/deschedmetrics"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// DeschedulingFacts are what the Descheduling condition is decided by.
type DeschedulingFacts struct {
	// Deployment is the descheduler's Deployment as the cache holds it, nil when there is
	// none yet.
	Deployment *appsv1.Deployment
	// TemplateHash is the pod template hash of the descheduler's Deployment as rendered
	// (render.PodTemplateHashAnnotation): what its pods must run to act as the resource says.
	TemplateHash string
	// PolicyProblem is why the scheduler-name admission policy is not in place as the
	// installer ships it, nil when it is.
	PolicyProblem error
	// NodeNames are the nodes the scheduler places pods on.
	NodeNames []string
	// Pause is why the descheduler is paused, render.DeschedulerRuns while it runs.
	Pause render.DeschedulerPause
	// Activity is what the operator last read of the descheduler's work, nil before it
	// first looked.
	Activity *DeschedulerActivity
}

// DeschedulerActivity is what a look at a descheduler's work found.
type DeschedulerActivity struct {
	// Read is true once a look read the metrics of some pod of the descheduler.
	Read bool
	// Summary is what its metrics say of the last hour.
	Summary deschedmetrics.Summary
	// NodeUse is each node's use by the descheduler's query, as a share of its CPU; nil
	// when it was not read.
	NodeUse map[string]float64
	// Unread says what could not be read, empty when everything was.
	Unread string
}

// maxNodesListed bounds the nodes status.descheduling names in a list.
const maxNodesListed = 10

// Descheduling reports the descheduler of spec.descheduling: status.descheduling and the
// Descheduling condition, both absent without spec.descheduling. It is called once the
// descheduler's objects are applied, so the thresholds were derived (a refusal returns
// before).
func Descheduling(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, facts DeschedulingFacts) {
	status.Descheduling = nil
	if cr.Spec.Descheduling == nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionDescheduling))
		return
	}
	thresholds, err := render.Thresholds(cr)
	if err != nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionDescheduling))
		return
	}
	report := &v1.DeschedulingStatus{Deployment: cr.Namespace + "/" + render.DeschedulerName(cr), Mode: cr.Spec.Descheduling.EffectiveMode(),
		ReceiveBelowPercent: thresholds.ReceiveBelow, EvictAbovePercent: thresholds.EvictAbove, RelativeToMean: thresholds.Deviation}
	if deployment := facts.Deployment; deployment != nil {
		report.ReadyReplicas, report.Replicas = deployment.Status.ReadyReplicas, deployment.Status.Replicas
	}
	reportActivity(report, thresholds, facts)
	status.Descheduling = report
	switch {
	case facts.Pause == render.PausedScoringByRequests:
		conditions.Set(v1.ConditionDescheduling, false, v1.ReasonDeschedulerPaused,
			"the descheduler is paused while the scheduler scores nodes by their requests (its metrics are unusable: see "+
				"MetricsAvailable): a pod evicted now could be placed back on the node it left. It resumes once the scheduler "+
				"scores by load again")
	case facts.Pause == render.PausedSchedulerRollingOut:
		conditions.Set(v1.ConditionDescheduling, false, v1.ReasonDeschedulerPaused,
			"the descheduler is paused until the scheduler of the current configuration serves (see Available): a pod evicted "+
				"before could be placed by another configuration, back on the node it left")
	case earlierPods(facts.Deployment, facts.TemplateHash) > 0:
		conditions.Set(v1.ConditionDescheduling, false, v1.ReasonDeschedulerRollingOut, fmt.Sprintf(
			"the descheduler's Deployment %s rolls out its current policy and mode: %d of its pods run an earlier template, and act as "+
				"it says (a pod of mode Evict evicts) until the rollout replaces them",
			report.Deployment, earlierPods(facts.Deployment, facts.TemplateHash)))
	case report.ReadyReplicas == 0:
		conditions.Set(v1.ConditionDescheduling, false, v1.ReasonDeschedulerNotReady, fmt.Sprintf(
			"no pod of the descheduler (Deployment %s) is ready: kubectl -n %s describe deployment %s, and the events of its pods, say why",
			report.Deployment, cr.Namespace, render.DeschedulerName(cr)))
	case facts.PolicyProblem != nil:
		conditions.Set(v1.ConditionDescheduling, false, v1.ReasonSchedulerNamePolicyMissing, fmt.Sprintf(
			"the descheduler runs, but selects its scheduler's pods by the label the installer's admission policy gives them, and that "+
				"policy is not in place (%v): it finds no pod it may evict; apply dist/routing.yaml, or with OLM the objects the CSV's "+
				"description lists", facts.PolicyProblem))
	case report.Mode == v1.DeschedulingDryRun:
		conditions.Set(v1.ConditionDescheduling, true, v1.ReasonDeschedulerDryRun, fmt.Sprintf(
			"the descheduler runs in mode DryRun and evicts nothing: it would evict pods of %s from nodes above %s while nodes below %s exist",
			cr.EffectiveSchedulerName(), bound(thresholds.EvictAbove, thresholds.Deviation), bound(thresholds.ReceiveBelow, thresholds.Deviation)))
	default:
		perNode, perCycle := cr.Spec.Descheduling.EffectiveEvictionLimits()
		conditions.Set(v1.ConditionDescheduling, true, v1.ReasonDeschedulerReady, fmt.Sprintf(
			"the descheduler runs: it evicts pods of %s from nodes above %s while nodes below %s exist, at most %d a node and %d a cycle",
			cr.EffectiveSchedulerName(), bound(thresholds.EvictAbove, thresholds.Deviation), bound(thresholds.ReceiveBelow, thresholds.Deviation),
			perNode, perCycle))
	}
	if report.ReadyReplicas > 0 {
		if sentence := activitySentence(report); sentence != "" {
			conditions.AppendToMessage(v1.ConditionDescheduling, sentence)
		}
	}
}

// earlierPods counts the descheduler's pods that run a template before the one rendered
// (templateHash), as its Deployment's status says. The status counts them all while it is
// of an earlier generation, or the cache holds the Deployment from before the last apply:
// none of its pods runs the rendered template yet.
func earlierPods(deployment *appsv1.Deployment, templateHash string) int32 {
	switch {
	case deployment == nil:
		return 0
	case deployment.Spec.Template.Annotations[render.PodTemplateHashAnnotation] != templateHash,
		!observe.StatusOfCurrentTemplate(deployment):
		return deployment.Status.Replicas
	default:
		return max(deployment.Status.Replicas-deployment.Status.UpdatedReplicas, 0)
	}
}

// activitySentence says what the operator read of the descheduler's work that a reader
// of the condition should know: what dry run would have evicted, that the failsafe holds
// it back, or what could not be read.
func activitySentence(report *v1.DeschedulingStatus) string {
	var sentences []string
	if report.Mode == v1.DeschedulingDryRun && report.EvictionsLastHour > 0 {
		sentences = append(sentences, fmt.Sprintf("In the last hour it would have evicted %d pods (status.descheduling.evictedFrom)", report.EvictionsLastHour))
	}
	if report.NodesWithoutFreshMetrics > 0 {
		sentences = append(sentences, fmt.Sprintf("%d of the scheduler's nodes have no fresh sample: its cycles evict nothing until every node has one",
			report.NodesWithoutFreshMetrics))
	}
	if report.Unread != "" {
		sentences = append(sentences, "The operator could not read all of its work (status.descheduling.unread)")
	}
	return strings.Join(sentences, ". ")
}

// bound says a threshold: a percentage of a node's CPU, or points from the nodes' mean.
func bound(percent int32, relativeToMean bool) string {
	if relativeToMean {
		return fmt.Sprintf("%d points from the nodes' mean CPU use", percent)
	}
	return fmt.Sprintf("%d %% of their CPU used", percent)
}

// reportActivity fills in what the operator read of the descheduler's work: cycles and
// evictions of the last hour, the nodes above the band by the descheduler's own query,
// and the nodes without a fresh sample, for which the descheduler evicts nothing.
func reportActivity(report *v1.DeschedulingStatus, thresholds render.DeschedulingThresholds, facts DeschedulingFacts) {
	activity := facts.Activity
	if activity == nil {
		return
	}
	report.Unread = usertext.Cut(activity.Unread, maxUnreadInStatus)
	if activity.Read {
		summary := activity.Summary
		report.CyclesLastHour = clampInt32(summary.Cycles)
		report.EvictionsLastHour = clampInt32(deschedmetrics.Total(summary.Evicted))
		for _, node := range deschedmetrics.Busiest(summary.Evicted, maxNodesListed) {
			report.EvictedFrom = append(report.EvictedFrom, v1.NodeEvictions{Node: node, Pods: clampInt32(summary.Evicted[node])})
		}
		if !summary.LastCycleSeen.IsZero() {
			report.LastCycleSeen = &metav1.Time{Time: summary.LastCycleSeen}
		}
		if !summary.CountedSince.IsZero() {
			report.CountedSince = &metav1.Time{Time: summary.CountedSince}
		}
	}
	if activity.NodeUse == nil {
		return
	}
	// The query answers for every node Prometheus has series of; the descheduler acts on
	// the scheduler's nodes only (its policy's nodeSelector), and compares them with their
	// own mean.
	use := make(map[string]float64, len(facts.NodeNames))
	for _, node := range facts.NodeNames {
		if share, fresh := activity.NodeUse[node]; fresh {
			use[node] = share
		} else {
			report.NodesWithoutFreshMetrics++
		}
	}
	above := NodesAboveBand(use, thresholds)
	report.NodesAboveBandCount = int32(len(above))
	report.NodesAboveBand = above[:min(len(above), maxNodesListed)]
}

// maxUnreadInStatus bounds what status says of what the operator could not read.
const maxUnreadInStatus = 512

// NodesAboveBand are the nodes whose use is above thresholds' EvictAbove, most used
// first: percent of the node's CPU, or, relative to the mean, points above the mean use of
// the nodes answered, as LowNodeUtilization compares them.
func NodesAboveBand(use map[string]float64, thresholds render.DeschedulingThresholds) []string {
	bound := float64(thresholds.EvictAbove)
	if thresholds.Deviation && len(use) > 0 {
		var sum float64
		for _, share := range use {
			sum += share * 100
		}
		bound += sum / float64(len(use))
	}
	var above []string
	for node, share := range use {
		if share*100 > bound {
			above = append(above, node)
		}
	}
	slices.SortFunc(above, func(a, b string) int {
		if use[a] != use[b] {
			return cmp.Compare(use[b], use[a])
		}
		return strings.Compare(a, b)
	})
	return above
}

// clampInt32 is count, at most the largest int32.
func clampInt32(count uint64) int32 {
	return int32(min(count, math.MaxInt32))
}
