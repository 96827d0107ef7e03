package gather

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// RecordingRulesPlan says what becomes of the recording rules a SecondaryScheduler asks for.
type RecordingRulesPlan struct {
	// Target is the Prometheus to install them for, nil for none.
	Target *render.RecordingRuleTarget
	// Shared is the namespace/name of the PrometheusRule another SecondaryScheduler
	// installed for the same Prometheus, which serves this one too: two would record the
	// same series twice.
	Shared string
	// Note says why none are installed, for the MetricsAvailable message.
	Note string
}

// Name is the namespace/name of the PrometheusRule that defines cr's scheduler's series,
// its own or the one it shares, empty for none.
func (p RecordingRulesPlan) Name(cr *v1.SecondaryScheduler) string {
	if p.Target != nil {
		return p.Target.Namespace + "/" + render.RecordingRuleName(cr)
	}
	return p.Shared
}

// recordingRules decides, when cr asks for recording rules, which Prometheus they are
// for, whether another SecondaryScheduler's already serve, or why none can be installed.
func (g *Gatherer) recordingRules(ctx context.Context, cr *v1.SecondaryScheduler, endpoint *promdiscovery.Endpoint) (RecordingRulesPlan, error) {
	if !cr.Spec.Profile.ReadsPrometheus() || !cr.Spec.Profile.LoadMetrics().InstallRecordingRules {
		return RecordingRulesPlan{}, nil
	}
	if _, err := g.mapper.RESTMapping(render.PrometheusRuleGVK.GroupKind(), render.PrometheusRuleGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return RecordingRulesPlan{Note: "installRecordingRules is set, but this cluster has no PrometheusRule kind (monitoring.coreos.com/v1): " +
				"it needs the Prometheus Operator; otherwise add the recording rules to Prometheus' rule files yourself"}, nil
		}
		return RecordingRulesPlan{}, fmt.Errorf("look up the PrometheusRule kind: %w", err)
	}
	if endpoint == nil || endpoint.Prometheus == nil {
		var err error
		if endpoint, err = g.discovered.remember(discoveryKey{object: client.ObjectKeyFromObject(cr), operated: true}, g.discoveryInterval, func() (*promdiscovery.Endpoint, error) {
			return promdiscovery.FindOperated(ctx, g.api, g.discoveryNamespaces())
		}); err != nil {
			return RecordingRulesPlan{}, err
		}
	}
	if endpoint == nil || endpoint.Prometheus == nil {
		return RecordingRulesPlan{Note: "installRecordingRules is set, but no Prometheus Operator Prometheus with a Service in front of it was found to install them for"}, nil
	}
	prometheus := endpoint.Prometheus
	selector := prometheus.RuleSelector
	switch {
	case selector == nil:
		return RecordingRulesPlan{Note: fmt.Sprintf("installRecordingRules is set, but Prometheus %s/%s has no spec.ruleSelector, so it loads no PrometheusRule; "+
			"give it one (for example matchLabels {role: recording-rules}) and the operator labels its rules to match", prometheus.Namespace, prometheus.Name)}, nil
	case len(selector.MatchExpressions) > 0:
		return RecordingRulesPlan{Note: fmt.Sprintf("installRecordingRules is set, but the spec.ruleSelector of Prometheus %s/%s uses matchExpressions, "+
			"which the operator does not try to satisfy; select rules with matchLabels", prometheus.Namespace, prometheus.Name)}, nil
	}
	if err := render.CheckRuleSelector(selector.MatchLabels); err != nil {
		// No PrometheusRule can satisfy it, whatever the operator retries: say so instead.
		return RecordingRulesPlan{Note: fmt.Sprintf("installRecordingRules is set, but Prometheus %s/%s selects rules the operator cannot install: %v; "+
			"select rules with labels the operator may set (for example matchLabels {role: recording-rules})", prometheus.Namespace, prometheus.Name, err)}, nil
	}
	target := &render.RecordingRuleTarget{Namespace: prometheus.Namespace, Labels: selector.MatchLabels}
	shared, err := g.othersRecordingRules(ctx, cr, target)
	if err != nil || shared != "" {
		return RecordingRulesPlan{Shared: shared}, err
	}
	return RecordingRulesPlan{Target: target}, nil
}

// othersRecordingRules is the namespace/name of a PrometheusRule that another
// SecondaryScheduler installed for target, or empty. The first one installed serves all;
// when it goes, the next reconcile of another installs its own.
func (g *Gatherer) othersRecordingRules(ctx context.Context, cr *v1.SecondaryScheduler, target *render.RecordingRuleTarget) (string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(render.PrometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))
	selector := client.MatchingLabels{render.LabelManagedBy: render.ManagedByValue}
	for key, value := range target.Labels {
		selector[key] = value
	}
	if err := g.api.List(ctx, list, client.InNamespace(target.Namespace), selector); err != nil {
		return "", fmt.Errorf("list PrometheusRules in %s: %w", target.Namespace, err)
	}
	names := []string{}
	for _, rule := range list.Items {
		labels := rule.GetLabels()
		if labels[render.LabelOwnerNamespace] != cr.Namespace || labels[render.LabelOwnerName] != cr.Name {
			names = append(names, rule.GetNamespace()+"/"+rule.GetName())
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	slices.Sort(names)
	return names[0], nil
}
