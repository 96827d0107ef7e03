package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refwatch"
)

// referenceKind is a kind of object that SecondarySchedulers reference by name: gathering
// reads it uncached, and the operator watches each object referenced, one narrow watch
// each (internal/refwatch), so that an edit of it reconciles its referrers without a
// cache of every such object in the cluster.
type referenceKind struct {
	// name says what the objects are.
	name string
	// resource and object are the objects' resource and Go type, of the core API group
	// (the watches go through its REST client).
	resource string
	object   func() runtime.Object
	// labelSelector, when set, narrows each watch to its object while it carries these
	// labels: the operator never receives it otherwise.
	labelSelector string
	// referenced are the objects of this kind that gathering read for a SecondaryScheduler.
	referenced func(gather.References) gather.ReferenceSet
}

// referenceKinds are every kind of object SecondarySchedulers reference by name, one line
// each: the constructor makes their watches, gathering feeds them, and forgetting a
// SecondaryScheduler stops them, all from this table.
var referenceKinds = []referenceKind{
	{name: "scheduler configuration ConfigMap", resource: "configmaps", object: newConfigMap,
		referenced: func(found gather.References) gather.ReferenceSet { return single(found.Config) }},
	// Only Secrets meant for a scheduler's metrics provider reach the operator.
	{name: "metrics token Secret", resource: "secrets", object: newSecret, labelSelector: v1.MetricsTokenForLabel,
		referenced: func(found gather.References) gather.ReferenceSet { return single(found.TokenSecret) }},
	{name: "metrics CA bundle ConfigMap", resource: "configmaps", object: newConfigMap,
		referenced: func(found gather.References) gather.ReferenceSet { return single(found.CABundle) }},
	// Only Secrets meant for a scheduler's extenders reach the operator, and likewise the
	// ConfigMaps of their CA bundles.
	{name: "extender TLS Secret", resource: "secrets", object: newSecret, labelSelector: v1.LabelExtenderTLSFor,
		referenced: func(found gather.References) gather.ReferenceSet { return found.ExtenderSecrets }},
	{name: "extender CA bundle ConfigMap", resource: "configmaps", object: newConfigMap, labelSelector: v1.LabelExtenderTLSFor,
		referenced: func(found gather.References) gather.ReferenceSet { return found.ExtenderConfigMaps }},
}

func newConfigMap() runtime.Object { return &corev1.ConfigMap{} }

func newSecret() runtime.Object { return &corev1.Secret{} }

// single is reference as a set of one object, or of none.
func single(reference gather.Reference) gather.ReferenceSet {
	if reference.Key == nil {
		return gather.ReferenceSet{Known: reference.Known}
	}
	return gather.ReferenceSet{Known: reference.Known, Keys: []types.NamespacedName{*reference.Key}}
}

// referenceWatch is a kind of reference and the watches of its objects.
type referenceWatch struct {
	referenceKind
	watches *refwatch.Watches
}

// newReferenceWatches makes the watches of every kind of referenceKinds, through core, a
// REST client of the core API group.
func newReferenceWatches(core rest.Interface) []referenceWatch {
	watches := make([]referenceWatch, 0, len(referenceKinds))
	for _, kind := range referenceKinds {
		var options []refwatch.Option
		if kind.labelSelector != "" {
			options = append(options, refwatch.WithLabelSelector(kind.labelSelector))
		}
		watches = append(watches, referenceWatch{referenceKind: kind, watches: refwatch.New(core, kind.resource, kind.object(), options...)})
	}
	return watches
}
