package render

import (
	"fmt"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// schedulerPluginsRepository publishes kubernetes-sigs/scheduler-plugins' kube-scheduler,
// which carries every in-tree plugin plus Trimaran and the other out-of-tree ones.
const schedulerPluginsRepository = "registry.k8s.io/scheduler-plugins/kube-scheduler"

// schedulerPluginsReleases maps a Kubernetes minor version to the newest published
// scheduler-plugins release built for it (scheduler-plugins v0.N is built for 1.N).
var schedulerPluginsReleases = map[int]string{
	34: "v0.34.7",
	33: "v0.33.5",
	32: "v0.32.7",
	31: "v0.31.8",
	30: "v0.30.12",
}

const newestKnownMinor, oldestKnownMinor = 34, 30

// SchedulerImage is the image of cr's scheduler and a sentence saying where it comes
// from. An explicit spec.schedulerImage wins; otherwise the scheduler-plugins release
// for the cluster's minor version, or the nearest known one, said as such.
func SchedulerImage(cr *v1.SecondaryScheduler, kubernetesMinor int) (image, source string) {
	if cr.Spec.SchedulerImage != "" {
		return cr.Spec.SchedulerImage, "spec.schedulerImage"
	}
	if release, ok := schedulerPluginsReleases[kubernetesMinor]; ok {
		return schedulerPluginsRepository + ":" + release,
			fmt.Sprintf("default: the scheduler-plugins release for Kubernetes 1.%d", kubernetesMinor)
	}
	nearest := newestKnownMinor
	if kubernetesMinor > 0 && kubernetesMinor < oldestKnownMinor {
		nearest = oldestKnownMinor
	}
	return schedulerPluginsRepository + ":" + schedulerPluginsReleases[nearest],
		fmt.Sprintf("default: no scheduler-plugins release is known for Kubernetes 1.%d, so the one for 1.%d; set spec.schedulerImage to choose", kubernetesMinor, nearest)
}
