package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// pruneRecordingRules deletes cr's PrometheusRules but the one in desired, if any. They
// live in the Prometheus' namespace, where no owner reference reaches, so they are found
// by cr's owner labels, its UID included, uncached. Labels are settable by whoever may
// write a PrometheusRule there, so each is deleted only when it is provably cr's
// (deleteOwned, ownership.OwnedBy): the name render gives cr's rules, and the controller
// reference render gives (cr's in cr's namespace, none elsewhere), with a precondition on
// its UID.
func (r *writer) pruneRecordingRules(ctx context.Context, cr *v1.SecondaryScheduler, desired []*unstructured.Unstructured) error {
	if !mayHaveRecordingRules(cr) || cr.UID == "" {
		// Most schedulers never had any: the list would be a request per reconcile, and
		// a 404 in a cluster without the Prometheus Operator.
		return nil
	}
	keep := ""
	for _, object := range desired {
		if object.GroupVersionKind() == render.PrometheusRuleGVK {
			keep = object.GetNamespace() + "/" + object.GetName()
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(render.PrometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))
	if err := r.APIReader.List(ctx, list, ownership.OwnedBySelector(cr)); err != nil {
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
