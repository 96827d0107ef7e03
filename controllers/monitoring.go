package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// MonitoringInstaller applies, once this replica leads, the ServiceMonitors and the
// PrometheusRule of docs/monitoring.md in the operator's namespace, of each kind the
// cluster has: the Prometheus Operator may be absent, and then nothing is created,
// nothing fails and nothing is retried; the operator looks again at its next start.
type MonitoringInstaller struct {
	// Client applies the objects.
	Client client.Client
	// Mapper tells whether the cluster has each kind.
	Mapper meta.RESTMapper
	// Namespace is the operator's.
	Namespace string
	// SchedulerNamespaces are the namespaces where the operator runs schedulers
	// (tenancy.Policy): the only ones the schedulers' ServiceMonitor selects, since
	// Prometheus sends its token to every target it selects.
	SchedulerNamespaces []string
	// Labels are what a Prometheus selects ServiceMonitors and PrometheusRules by.
	Labels map[string]string
	// Backoff paces the attempts to apply an object the API server refused for a while
	// (a permission granted late, an API server restarting); the zero value, five
	// attempts from 2 s over about a minute.
	Backoff wait.Backoff
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader writes.
func (m *MonitoringInstaller) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable. It returns nil when done, whatever it could apply:
// the operator runs schedulers without monitoring objects, and says so in its log.
func (m *MonitoringInstaller) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("monitoring")
	objects, err := render.MonitoringObjects(m.Namespace, m.SchedulerNamespaces, m.Labels)
	if err != nil {
		log.Error(err, "cannot render the monitoring objects; none are applied")
		return nil
	}
	var missingKinds []string
	for _, object := range objects {
		gvk := object.GroupVersionKind()
		if _, err := m.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				missingKinds = append(missingKinds, gvk.Kind)
				continue
			}
			log.Error(err, "cannot tell whether the cluster has the kind; not applied", "kind", gvk.Kind, "name", object.GetName())
			continue
		}
		if err := m.apply(ctx, object); err != nil {
			log.Error(err, "cannot apply a monitoring object; scrape and alert as docs/monitoring.md says without the Prometheus Operator",
				"kind", gvk.Kind, "namespace", object.GetNamespace(), "name", object.GetName())
			continue
		}
		log.V(1).Info("applied", "kind", gvk.Kind, "namespace", object.GetNamespace(), "name", object.GetName())
	}
	if len(missingKinds) > 0 {
		log.Info("the cluster has no Prometheus Operator API (monitoring.coreos.com/v1): no ServiceMonitor or PrometheusRule applied; "+
			"the operator looks again when it restarts, and docs/monitoring.md says how to scrape and alert without it", "missingKinds", missingKinds)
	}
	return nil
}

// apply applies object, trying again a few times while the API server refuses.
func (m *MonitoringInstaller) apply(ctx context.Context, object *unstructured.Unstructured) error {
	backoff := m.Backoff
	if backoff.Steps == 0 {
		backoff = wait.Backoff{Duration: 2 * time.Second, Factor: 2, Steps: 5}
	}
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = m.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(FieldOwner), client.ForceOwnership)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("apply %s %s/%s: %w", object.GetKind(), object.GetNamespace(), object.GetName(), last)
	}
	return err
}
