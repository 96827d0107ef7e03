package report

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/failsafe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// NoMetrics reports that the scheduler reads no probed metrics.
func NoMetrics(status *v1.SecondarySchedulerStatus) {
	meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionMetricsAvailable))
	status.Metrics = nil
}

// Metrics reports the probe of the metrics cr's scheduler reads and the failsafe's
// verdict (judged before rendering, so the configuration applied already follows it). It
// returns the problem that degrades the scheduler, nil for none: unusable metrics do,
// since it would score every node alike, or by old data, without a word, and so does
// scoring by requests. It returns when to look again too: zero when the probe's own
// result will bring the next look. interval is how long a probe result stands.
func Metrics(cr *v1.SecondaryScheduler, desired *gather.Facts, status *v1.SecondarySchedulerStatus, conditions *Conditions,
	verdict failsafe.Verdict, interval time.Duration) (*reasons.Finding, time.Duration) {
	// Nil for profile Custom, whose Trimaran args say where metrics come from: the
	// defaults of staleAfter apply, and it has no failsafe.
	metrics := cr.Spec.Profile.LoadMetrics()
	status.Metrics = metricsStatusOf(cr, desired.Prometheus, desired)
	verdict.State.Store(status.Metrics)
	if !verdict.Probed {
		// The probe's result brings the next reconcile.
		return reportProbing(status, metrics, verdict.State, conditions), 0
	}
	result := verdict.Result
	status.Metrics.NodesWithMetrics, status.Metrics.Nodes = int32(result.NodesWithMetrics), int32(result.Nodes)
	if result.Reason == v1.ReasonMetricsStale && !result.NewestSample.IsZero() {
		status.Metrics.NewestSample = &metav1.Time{Time: result.NewestSample.Truncate(time.Second)}
	}
	result = explainProbe(cr, desired, result)
	conditions.Set(v1.ConditionMetricsAvailable, result.Available, result.Reason, result.Message)
	var degraded *reasons.Finding
	switch found := func() string {
		return strings.TrimSuffix(result.Message, ".") + "." + failsafe.Note(metrics, verdict.State)
	}; {
	case !result.Available:
		degraded = &reasons.Finding{Reason: result.Reason, Message: scoringWithUnusableMetrics(result, verdict.State) + ": " + found()}
	case verdict.State.Scoring == v1.ScoringByRequests:
		degraded = &reasons.Finding{Reason: v1.ReasonScoringByRequests, Message: failsafe.ResumingMessage(metrics, verdict.State)}
	}
	if result.Reason == v1.ReasonUnauthorized && desired.Access.Identity != nil && !ReportedUnauthorized(cr) {
		// The operator's own token was refused: once this is reported, the next reconcile
		// asks the API server, once, whether the token is still valid, and replaces it if not.
		return degraded, time.Second
	}
	return degraded, Sooner(interval, verdict.RecheckAfter)
}

// scoringWithUnusableMetrics says how the scheduler scores nodes now that its metrics are
// unusable, as it really does: by requests while the failsafe holds; else Trimaran's
// plugins score with whatever load-watcher last fetched, and a node without series gets
// the lowest score, so some nodes with series still steer placement while none scores
// every node alike.
func scoringWithUnusableMetrics(result metricsprobe.Result, state failsafe.State) string {
	switch {
	case state.Scoring == v1.ScoringByRequests:
		return "the load-aware scheduler's metrics are unusable, so it scores nodes by their requests (the failsafe)"
	case result.Reason == v1.ReasonMetricsStale:
		return "the load-aware scheduler scores nodes by old data"
	case result.NodesWithMetrics > 0:
		return fmt.Sprintf("the load-aware scheduler sees the load of %d of %d nodes only: it places pods by the load of those, "+
			"and scores the other %d, which have no series, lowest", result.NodesWithMetrics, result.Nodes, result.Nodes-result.NodesWithMetrics)
	}
	return "the load-aware scheduler runs but cannot see node load, so it scores every node alike"
}

// explainProbe adds to a failed probe what the operator knows of its cause: recording
// rules it could not install or did install, and the identity whose token was refused.
func explainProbe(cr *v1.SecondaryScheduler, desired *gather.Facts, result metricsprobe.Result) metricsprobe.Result {
	if result.Available {
		return result
	}
	switch {
	case desired.RecordingRules.Note != "" && (result.Reason == v1.ReasonRecordingRuleMissing || result.Reason == v1.ReasonNodeLabelMismatch):
		result.Reason, result.Message = v1.ReasonRecordingRulesNotInstalled, result.Message+" "+desired.RecordingRules.Note
	case result.Reason == v1.ReasonRecordingRuleMissing && desired.RecordingRules.Name(cr) != "":
		result.Message += fmt.Sprintf(" The operator installed PrometheusRule %s; the series appear once the Prometheus Operator "+
			"has loaded it into Prometheus and it has been evaluated, usually within a few minutes.", desired.RecordingRules.Name(cr))
	case result.Reason == v1.ReasonUnauthorized && desired.Access.Identity != nil:
		result.Message += fmt.Sprintf(" The token is a bound token of ServiceAccount %s/%s: check that ClusterRole %s lets it read the metrics "+
			"(the proxy in front of Prometheus authorizes it with a SubjectAccessReview). A token that is no longer valid is replaced at the next probe.",
			cr.Namespace, render.MetricsServiceAccountName(cr), desired.Access.Identity.ClusterRole)
	}
	return result
}

// metricsStatusOf is what status.metrics says before any probe: where the metrics come
// from and how the scheduler reaches them.
func metricsStatusOf(cr *v1.SecondaryScheduler, endpoint *promdiscovery.Endpoint, desired *gather.Facts) *v1.MetricsStatus {
	metrics := &v1.MetricsStatus{Address: metricsprobe.AddressForStatus(endpoint.URL), Source: endpoint.Source,
		Credentials: desired.Access.Credentials, RecordingRules: desired.RecordingRules.Name(cr)}
	if identity := desired.Access.Identity; identity != nil {
		metrics.TokenRenewTime = &metav1.Time{Time: identity.Token.RenewAt.Truncate(time.Second)}
	}
	if ca := desired.Access.TrustedCA; ca != nil {
		metrics.TrustedCA = fmt.Sprintf("ConfigMap %s/%s, key %s", cr.Namespace, ca.ConfigMap, ca.Key)
	}
	return metrics
}

// reportProbing says, while the first probe of these metrics runs, that nothing is known
// of them yet. How the scheduler scores (the failsafe's state) stays as it was: it
// returns the problem of scoring by requests, nil when the scheduler scores by load.
func reportProbing(status *v1.SecondarySchedulerStatus, metrics *v1.LoadMetrics, state failsafe.State, conditions *Conditions) *reasons.Finding {
	conditions.SetUnknown(v1.ConditionMetricsAvailable, v1.ReasonMetricsProbing, fmt.Sprintf(
		"probing the metrics at %s (from %s); the result follows within the probe timeout", status.Metrics.Address, status.Metrics.Source))
	if state.Scoring == v1.ScoringByRequests {
		return &reasons.Finding{Reason: v1.ReasonScoringByRequests, Message: failsafe.ResumingMessage(metrics, state)}
	}
	return nil
}

// ReportedUnauthorized reports whether cr's status says the metrics endpoint refused the
// token: status, not the prober, so that a refusal is reported before the token is
// replaced (and so seen, as an Event too), not replaced unseen.
func ReportedUnauthorized(cr *v1.SecondaryScheduler) bool {
	condition := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionMetricsAvailable))
	return condition != nil && condition.Reason == string(v1.ReasonUnauthorized)
}

// Sooner is the sooner of two delays, a zero one meaning never.
func Sooner(a, b time.Duration) time.Duration {
	if a <= 0 {
		return b
	}
	if b <= 0 {
		return a
	}
	return min(a, b)
}
