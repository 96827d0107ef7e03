package render

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PluginControllerName names scheduler-plugins' controller: its Deployment, which the
// operator writes in its own namespace, and its ServiceAccount and roles, which the
// installer ships (config/rbac/plugin_controller.yaml).
const PluginControllerName = "secondary-scheduler-plugin-controller"

// PluginControllerImageAnnotation is the annotation, on a scheduler's Deployment, that
// holds the controller image of the scheduler image's release. The operator writes it
// while the scheduler's configuration enables a plugin whose resources' status the
// controller keeps (schedconfig.PluginsNeedingController), and runs the controller while
// any scheduler's Deployment carries it: the controller follows what is rolled out, and
// goes with the last scheduler that needs it.
const PluginControllerImageAnnotation = "operator.secondary-scheduler.io/plugin-controller-image"

// pluginControllerRepository publishes scheduler-plugins' controller, next to
// schedulerPluginsRepository.
const pluginControllerRepository = "registry.k8s.io/scheduler-plugins/controller"

// PluginControllerImage is the controller image of the release of a scheduler image, from
// the operator's own table of releases: scheduler-plugins publishes both at
// registry.k8s.io under the same tag. Only the Kubernetes minor the scheduler image's tag
// names is read from it, never its registry or repository: the controller runs in the
// operator's namespace under an account of its own, and no spec may choose its code
// (admission checks the images a spec names, and this one it does not name). A cluster that
// pulls through a mirror mirrors registry.k8s.io, as for the default scheduler image. For
// a scheduler image of no release the operator knows (a digest, a build of one's own, a
// release older or newer than its table), it is the newest release, and ok is false.
func PluginControllerImage(scheduler Image) (image string, ok bool) {
	release, known := schedulerPluginsReleases[scheduler.KubernetesMinor]
	if scheduler.Kind != SchedulerPluginsImage || !known {
		return pluginControllerRepository + ":" + schedulerPluginsReleases[newestKnownMinor], false
	}
	return pluginControllerRepository + ":" + release, true
}

// PluginControllerReleaseImages are the controller images of every scheduler-plugins
// release the operator knows, oldest first: each is the controller of a default scheduler
// image (SchedulerPluginsReleaseImages).
func PluginControllerReleaseImages() []string {
	references := make([]string, 0, len(schedulerPluginsReleases))
	for _, scheduler := range SchedulerPluginsReleaseImages() {
		image, _ := PluginControllerImage(explicitImage(scheduler))
		references = append(references, image)
	}
	return references
}

// ChoosePluginControllerImage is the image of the one controller that serves every
// scheduler needing it, from the controller images their Deployments ask for
// (PluginControllerImageAnnotation): that of the newest release among them. The controller
// reads and writes only scheduling.x-k8s.io/v1alpha1, which every release since v0.24
// serves alike. An annotation is read as a wish, not trusted: anyone who may edit a
// scheduler's Deployment may write it, so a value that is not one of the operator's own
// releases (PluginControllerReleaseImages) counts as the newest of them; "" for none.
func ChoosePluginControllerImage(asked []string) string {
	releases := PluginControllerReleaseImages()
	chosen := -1
	for _, image := range asked {
		i := slices.Index(releases, image)
		if i < 0 {
			i = len(releases) - 1
		}
		chosen = max(chosen, i)
	}
	if chosen < 0 {
		return ""
	}
	return releases[chosen]
}

// PluginControllerFacts are what the controller's Deployment is rendered from.
type PluginControllerFacts struct {
	// Namespace is the operator's namespace, where the installer ships the controller's
	// ServiceAccount.
	Namespace string
	// Image is the controller image (ChoosePluginControllerImage).
	Image string
	// Owner is the Deployment's owner (InstallationOwner), none when zero.
	Owner metav1.OwnerReference
	// PriorityClassName is the class of the controller's pods: the operator's default
	// class, the schedulers', when it exists; "" for none.
	PriorityClassName string
}

// PluginControllerLabels are the labels of the controller's Deployment and pods: the
// operator's managed-by label, by which its cache selects the Deployment, and no owner
// labels, since it belongs to no SecondaryScheduler.
func PluginControllerLabels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelName: PluginControllerName}
}

// PluginController renders scheduler-plugins' controller Deployment
// (bindata/assets/plugin-controller/deployment.yaml).
func PluginController(facts PluginControllerFacts) (*unstructured.Unstructured, error) {
	node, err := newObject("plugin-controller/deployment.yaml", PluginControllerName, facts.Namespace)
	if err != nil {
		return nil, err
	}
	selector := map[string]string{LabelName: PluginControllerName}
	if err := setJSONValue(node, selector, "spec", "selector", "matchLabels"); err != nil {
		return nil, err
	}
	if err := setStrings(node, PluginControllerLabels(), "spec", "template", "metadata", "labels"); err != nil {
		return nil, err
	}
	term, err := lookup(node, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "[weight=100]")
	if err != nil {
		return nil, err
	}
	if err := setStrings(term, selector, "podAffinityTerm", "labelSelector", "matchLabels"); err != nil {
		return nil, err
	}
	if err := setValue(node, PluginControllerName, "spec", "template", "spec", "serviceAccountName"); err != nil {
		return nil, err
	}
	if facts.PriorityClassName != "" {
		if err := setValue(node, facts.PriorityClassName, "spec", "template", "spec", "priorityClassName"); err != nil {
			return nil, err
		}
	}
	container, err := lookup(node, "spec", "template", "spec", "containers", "[name=controller]")
	if err != nil {
		return nil, err
	}
	if err := setValue(container, facts.Image, "image"); err != nil {
		return nil, err
	}
	object, err := toUnstructured(node)
	if err != nil {
		return nil, fmt.Errorf("convert the plugin controller: %w", err)
	}
	object.SetLabels(PluginControllerLabels())
	if facts.Owner.UID != "" {
		object.SetOwnerReferences([]metav1.OwnerReference{facts.Owner})
	}
	return object, nil
}
