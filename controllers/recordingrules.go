package controllers

import (
	"context"
	"fmt"

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

// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=prometheusrules,verbs=get;list;create;update;patch;delete

// recordingRuleTarget is the Prometheus to install the recording rules for when cr asks
// for them, or a note saying why none can be, for the MetricsAvailable message.
func (r *SecondarySchedulerReconciler) recordingRuleTarget(ctx context.Context, cr *v1.SecondaryScheduler,
	endpoint *promdiscovery.Endpoint) (*render.RecordingRuleTarget, string, error) {
	if !cr.Spec.Profile.ReadsPrometheus() || !cr.Spec.Profile.LoadMetrics().InstallRecordingRules {
		return nil, "", nil
	}
	if _, err := r.RESTMapper().RESTMapping(prometheusRuleGVK.GroupKind(), prometheusRuleGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, "installRecordingRules is set, but this cluster has no PrometheusRule kind (monitoring.coreos.com/v1): " +
				"it needs the Prometheus Operator; otherwise add the recording rules to Prometheus' rule files yourself", nil
		}
		return nil, "", fmt.Errorf("look up the PrometheusRule kind: %w", err)
	}
	if endpoint == nil || endpoint.Prometheus == nil {
		var err error
		if endpoint, err = promdiscovery.FindOperated(ctx, r.APIReader, cr.Namespace); err != nil {
			return nil, "", err
		}
	}
	if endpoint == nil || endpoint.Prometheus == nil {
		return nil, "installRecordingRules is set, but no Prometheus Operator Prometheus with a Service in front of it was found to install them for", nil
	}
	prometheus := endpoint.Prometheus
	selector := prometheus.RuleSelector
	switch {
	case selector == nil:
		return nil, fmt.Sprintf("installRecordingRules is set, but Prometheus %s/%s has no spec.ruleSelector, so it loads no PrometheusRule; "+
			"give it one (for example matchLabels {role: recording-rules}) and the operator labels its rules to match", prometheus.Namespace, prometheus.Name), nil
	case len(selector.MatchExpressions) > 0:
		return nil, fmt.Sprintf("installRecordingRules is set, but the spec.ruleSelector of Prometheus %s/%s uses matchExpressions, "+
			"which the operator does not try to satisfy; select rules with matchLabels", prometheus.Namespace, prometheus.Name), nil
	}
	return &render.RecordingRuleTarget{Namespace: prometheus.Namespace, Labels: selector.MatchLabels}, "", nil
}

// pruneRecordingRules deletes cr's PrometheusRules but the one in desired, if any. They
// live in the Prometheus' namespace, where no owner reference reaches, so they are found
// by label, uncached.
func (r *SecondarySchedulerReconciler) pruneRecordingRules(ctx context.Context, cr *v1.SecondaryScheduler, desired []*unstructured.Unstructured) error {
	keep := ""
	for _, object := range desired {
		if object.GroupVersionKind() == prometheusRuleGVK {
			keep = object.GetNamespace() + "/" + object.GetName()
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(prometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))
	if err := r.APIReader.List(ctx, list, ownerSelector(cr)); err != nil {
		if meta.IsNoMatchError(err) || promdiscovery.IsMissingKind(err) {
			return nil
		}
		return fmt.Errorf("list the scheduler's PrometheusRules: %w", err)
	}
	for i := range list.Items {
		rule := &list.Items[i]
		if rule.GetNamespace()+"/"+rule.GetName() == keep {
			continue
		}
		if err := r.Delete(ctx, rule); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete PrometheusRule %s: %w", client.ObjectKeyFromObject(rule), err)
		}
	}
	return nil
}
