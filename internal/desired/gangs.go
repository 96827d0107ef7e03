package desired

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// WorkloadPodGroup is the kind Kubernetes' GangScheduling reads: a cluster serves it with
// the feature gate GenericWorkload and scheduling.k8s.io/v1beta1 enabled.
var WorkloadPodGroup = schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1beta1", Kind: "PodGroup"}

// minWorkloadMinor is the oldest Kubernetes whose kube-scheduler reads the Workload API
// as scheduling.k8s.io/v1beta1 (1.35 and 1.36 read v1alpha1 and v1alpha2, which 1.37
// serves no more).
const minWorkloadMinor = 37

// checkGangImplementation refuses, before rollout, gangs by Kubernetes' GangScheduling
// (spec.gang.implementation Workload) where the scheduler could not run them: with an image
// known not to read the Workload API of this cluster (scheduler-plugins' images are built
// on an older Kubernetes; Kubernetes' own before 1.37), and on a cluster that does not
// serve it. An image of unknown kind or version is let through, as checkPluginsInImage
// lets its plugins through.
func checkGangImplementation(cr *v1.SecondaryScheduler, rendered *render.Result, kinds gather.ServedKinds) error {
	if render.GangPlugin(cr) != render.GangSchedulingPlugin {
		return nil
	}
	image := rendered.Image
	tooOld := image.Kind == render.KubeSchedulerImage && image.KubernetesMinor != 0 && image.KubernetesMinor < minWorkloadMinor
	if image.Kind == render.SchedulerPluginsImage || tooOld {
		return refusal.New(v1.ReasonPluginsNotInImage,
			"spec.gang.implementation Workload runs Kubernetes' GangScheduling, which reads the Workload API (scheduling.k8s.io/v1beta1) "+
				"as Kubernetes' own kube-scheduler of 1.%d or later does, and spec.schedulerImage %s is not one (%s); set spec.schedulerImage to "+
				"registry.k8s.io/kube-scheduler:v1.N.x for your cluster's 1.N, or use implementation Coscheduling",
			minWorkloadMinor, usertext.Cut(image.Reference, 200), usertext.Cut(image.Source, 300))
	}
	served, err := kinds.Serves(WorkloadPodGroup)
	if err != nil {
		return err
	}
	if !served {
		return refusal.New(v1.ReasonWorkloadAPIMissing,
			"spec.gang.implementation Workload needs the Workload API, and this cluster does not serve %s: enable the feature gate %s "+
				"on kube-apiserver, kube-controller-manager and kube-scheduler and --runtime-config=%s=true on kube-apiserver, or use "+
				"implementation Coscheduling; the running scheduler, if any, is kept, and this is checked again until it is served",
			WorkloadPodGroup.GroupVersion().String()+" PodGroups", render.GenericWorkloadGate, WorkloadPodGroup.GroupVersion())
	}
	return nil
}
