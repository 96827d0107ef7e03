package controllers

// A route in mode Audit labels the pods it would route (v1.LabelWouldRouteTo); the
// operator counts those that exist, per scheduler name, in status.routing.auditedPods, so
// that a platform team sees what Enforce would do before it does it.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
)

// wouldRouteToIndex indexes the audited pods by the scheduler name their label gives.
const wouldRouteToIndex = "wouldRouteTo"

// auditedPods is an informer of its own, beside the manager's cache, of the pods of every
// namespace that carry v1.LabelWouldRouteTo (the API server selects them by label), their
// metadata only, each trimmed to its name and that label: a cluster's other pods never
// reach the operator.
func auditedPods(mgr ctrl.Manager) (toolscache.SharedIndexInformer, error) {
	metadataClient, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("client of audited pods: %w", err)
	}
	informer := metadatainformer.NewFilteredMetadataInformer(metadataClient, corev1.SchemeGroupVersion.WithResource("pods"), metav1.NamespaceAll, 0,
		toolscache.Indexers{wouldRouteToIndex: indexWouldRouteTo},
		func(options *metav1.ListOptions) { options.LabelSelector = v1.LabelWouldRouteTo }).Informer()
	if err := informer.SetTransform(trimAuditedPod); err != nil {
		return nil, fmt.Errorf("informer of audited pods: %w", err)
	}
	if err := mgr.Add(informerRunnable{informer}); err != nil {
		return nil, fmt.Errorf("add the informer of audited pods: %w", err)
	}
	return informer, nil
}

// trimAuditedPod keeps of a pod's metadata what counting reads: its name, and the label.
func trimAuditedPod(object any) (any, error) {
	pod, ok := object.(*metav1.PartialObjectMetadata)
	if !ok {
		return object, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: pod.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		Labels: map[string]string{v1.LabelWouldRouteTo: pod.Labels[v1.LabelWouldRouteTo]},
	}}, nil
}

func indexWouldRouteTo(object any) ([]string, error) {
	pod, ok := object.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, fmt.Errorf("index audited pods: %T is no pod's metadata", object)
	}
	return []string{pod.Labels[v1.LabelWouldRouteTo]}, nil
}

// countAudited is how many audited pods would have gone to scheduler name.
func countAudited(audited toolscache.Indexer, name string) (int, error) {
	pods, err := audited.ByIndex(wouldRouteToIndex, name)
	if err != nil {
		return 0, fmt.Errorf("count the pods audited for %s: %w", name, err)
	}
	return len(pods), nil
}

// auditedPodSource wakes the SecondaryScheduler that claims the scheduler name an audited
// pod's label gives, when the pod comes or goes, once the informer has listed them all.
func (r *SecondarySchedulerReconciler) auditedPodSource(informer toolscache.SharedIndexInformer) source.Source {
	claimant := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, object client.Object) []reconcile.Request {
		claimants, err := gather.Claimants(ctx, r.cache, object.GetLabels()[v1.LabelWouldRouteTo])
		if err != nil {
			return nil
		}
		requests := make([]reconcile.Request, 0, len(claimants))
		for i := range claimants {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claimants[i])})
		}
		return requests
	})
	return &syncedInformerSource{Informer: source.Informer{Informer: informer, Handler: claimant}, what: "the informer of audited pods"}
}

// syncedInformerSource is an informer's source that the controller waits for (a
// SyncingSource): until the informer has listed every object, a count would be short.
type syncedInformerSource struct {
	source.Informer
	what string
}

// WaitForSync implements source.SyncingSource.
func (s *syncedInformerSource) WaitForSync(ctx context.Context) error {
	return waitForInformer(ctx, s.Informer.Informer.(toolscache.SharedIndexInformer), s.what)
}
