package controllers

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// prometheusRuleGVK is the Prometheus Operator's kind of rule files. It is not one of the
// cached child kinds: the cluster may not have it, and a cache of a missing kind would
// keep the manager from starting.
var prometheusRuleGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}

// recordingRulesPlan says what becomes of the recording rules a SecondaryScheduler asks for.
type recordingRulesPlan struct {
	// target is the Prometheus to install them for, nil for none.
	target *render.RecordingRuleTarget
	// shared is the namespace/name of the PrometheusRule another SecondaryScheduler
	// installed for the same Prometheus, which serves this one too: two would record the
	// same series twice.
	shared string
	// note says why none are installed, for the MetricsAvailable message.
	note string
}

// planRecordingRules decides, when cr asks for recording rules, which Prometheus they are
// for, whether another SecondaryScheduler's already serve, or why none can be installed.
func (r *SecondarySchedulerReconciler) planRecordingRules(ctx context.Context, cr *v1.SecondaryScheduler,
	endpoint *promdiscovery.Endpoint) (recordingRulesPlan, error) {
	if !cr.Spec.Profile.ReadsPrometheus() || !cr.Spec.Profile.LoadMetrics().InstallRecordingRules {
		return recordingRulesPlan{}, nil
	}
	if _, err := r.RESTMapper().RESTMapping(prometheusRuleGVK.GroupKind(), prometheusRuleGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return recordingRulesPlan{note: "installRecordingRules is set, but this cluster has no PrometheusRule kind (monitoring.coreos.com/v1): " +
				"it needs the Prometheus Operator; otherwise add the recording rules to Prometheus' rule files yourself"}, nil
		}
		return recordingRulesPlan{}, fmt.Errorf("look up the PrometheusRule kind: %w", err)
	}
	if endpoint == nil || endpoint.Prometheus == nil {
		var err error
		if endpoint, err = r.MetricsProber.discover(discoveryKey{object: client.ObjectKeyFromObject(cr), operated: true}, func() (*promdiscovery.Endpoint, error) {
			return promdiscovery.FindOperated(ctx, r.APIReader, r.discoveryNamespaces())
		}); err != nil {
			return recordingRulesPlan{}, err
		}
	}
	if endpoint == nil || endpoint.Prometheus == nil {
		return recordingRulesPlan{note: "installRecordingRules is set, but no Prometheus Operator Prometheus with a Service in front of it was found to install them for"}, nil
	}
	prometheus := endpoint.Prometheus
	selector := prometheus.RuleSelector
	switch {
	case selector == nil:
		return recordingRulesPlan{note: fmt.Sprintf("installRecordingRules is set, but Prometheus %s/%s has no spec.ruleSelector, so it loads no PrometheusRule; "+
			"give it one (for example matchLabels {role: recording-rules}) and the operator labels its rules to match", prometheus.Namespace, prometheus.Name)}, nil
	case len(selector.MatchExpressions) > 0:
		return recordingRulesPlan{note: fmt.Sprintf("installRecordingRules is set, but the spec.ruleSelector of Prometheus %s/%s uses matchExpressions, "+
			"which the operator does not try to satisfy; select rules with matchLabels", prometheus.Namespace, prometheus.Name)}, nil
	}
	if err := render.CheckRuleSelector(selector.MatchLabels); err != nil {
		// No PrometheusRule can satisfy it, whatever the operator retries: say so instead.
		return recordingRulesPlan{note: fmt.Sprintf("installRecordingRules is set, but Prometheus %s/%s selects rules the operator cannot install: %v; "+
			"select rules with labels the operator may set (for example matchLabels {role: recording-rules})", prometheus.Namespace, prometheus.Name, err)}, nil
	}
	target := &render.RecordingRuleTarget{Namespace: prometheus.Namespace, Labels: selector.MatchLabels}
	shared, err := r.othersRecordingRules(ctx, cr, target)
	if err != nil || shared != "" {
		return recordingRulesPlan{shared: shared}, err
	}
	return recordingRulesPlan{target: target}, nil
}

// discoveryNamespaces are the namespaces where Prometheus is discovered: those the
// cluster admin configured, else promdiscovery's defaults.
func (r *SecondarySchedulerReconciler) discoveryNamespaces() []string {
	if len(r.PrometheusNamespaces) > 0 {
		return r.PrometheusNamespaces
	}
	return promdiscovery.DefaultNamespaces
}

// othersRecordingRules is the namespace/name of a PrometheusRule that another
// SecondaryScheduler installed for target, or empty. The first one installed serves all;
// when it goes, the next reconcile of another installs its own.
func (r *SecondarySchedulerReconciler) othersRecordingRules(ctx context.Context, cr *v1.SecondaryScheduler, target *render.RecordingRuleTarget) (string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(prometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))
	selector := client.MatchingLabels{render.LabelManagedBy: render.ManagedByValue}
	for key, value := range target.Labels {
		selector[key] = value
	}
	if err := r.APIReader.List(ctx, list, client.InNamespace(target.Namespace), selector); err != nil {
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

// pruneRecordingRules deletes cr's PrometheusRules but the one in desired, if any. They
// live in the Prometheus' namespace, where no owner reference reaches, so they are found
// by cr's owner labels, its UID included, uncached, and each is deleted only when it is
// provably cr's, with a precondition on its UID (deleteOwned).
func (r *SecondarySchedulerReconciler) pruneRecordingRules(ctx context.Context, cr *v1.SecondaryScheduler, desired []*unstructured.Unstructured) error {
	if !mayHaveRecordingRules(cr) || cr.UID == "" {
		// Most schedulers never had any: the list would be a request per reconcile, and
		// a 404 in a cluster without the Prometheus Operator.
		return nil
	}
	keep := ""
	for _, object := range desired {
		if object.GroupVersionKind() == prometheusRuleGVK {
			keep = object.GetNamespace() + "/" + object.GetName()
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(prometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))
	if err := r.APIReader.List(ctx, list, ownedBySelector(cr)); err != nil {
		if meta.IsNoMatchError(err) || promdiscovery.IsMissingKind(err) {
			return nil
		}
		return fmt.Errorf("list the scheduler's PrometheusRules: %w", err)
	}
	var unwanted []client.Object
	for i := range list.Items {
		if rule := &list.Items[i]; rule.GetNamespace()+"/"+rule.GetName() != keep {
			unwanted = append(unwanted, rule)
		}
	}
	return r.deleteAll(ctx, cr, unwanted)
}

// mayHaveRecordingRules reports whether cr asks for recording rules or its status says it
// had some: only then may a PrometheusRule of its exist. A scheduler that asks installs
// its rules only after the ask is in its spec, and its status keeps their name until
// they are pruned.
func mayHaveRecordingRules(cr *v1.SecondaryScheduler) bool {
	return cr.Spec.Profile.ReadsPrometheus() && cr.Spec.Profile.LoadMetrics().InstallRecordingRules ||
		cr.Status.Metrics != nil && cr.Status.Metrics.RecordingRules != ""
}
