package render

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

func TestPluginControllerGolden(t *testing.T) {
	object, err := PluginController(PluginControllerFacts{Namespace: "secondary-scheduler-operator",
		Image: "registry.k8s.io/scheduler-plugins/controller:v0.35.7", Owner: InstallationOwner("0b7c"),
		PriorityClassName: v1.DefaultPriorityClassName})
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(object.Object)
	if err != nil {
		t.Fatal(err)
	}
	expectGolden(t, "plugin-controller", string(data))

	var deployment appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &deployment); err != nil {
		t.Fatal(err)
	}
	spec := deployment.Spec.Template.Spec
	if spec.ServiceAccountName != PluginControllerName {
		t.Errorf("serviceAccountName %q, want the shipped %s", spec.ServiceAccountName, PluginControllerName)
	}
	for key, value := range deployment.Spec.Selector.MatchLabels {
		if deployment.Spec.Template.Labels[key] != value {
			t.Errorf("the pods lack the selector's label %s=%s", key, value)
		}
	}
	if !ManagedByOperator(deployment.Labels) || deployment.Labels[LabelOwnerUID] != "" {
		t.Errorf("labels %v: want the operator's managed-by label and no owner's", deployment.Labels)
	}
}

// The controller is of the scheduler image's release, from the operator's own table: a
// spec's registry or repository never reaches it (no spec may choose the controller's
// code); an image that names no release the operator knows gets the newest, said as such.
func TestPluginControllerImage(t *testing.T) {
	newest := "registry.k8s.io/scheduler-plugins/controller:" + schedulerPluginsReleases[newestKnownMinor]
	tests := []struct {
		name, scheduler, want string
		known                 bool
	}{
		{"a release", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", "registry.k8s.io/scheduler-plugins/controller:v0.34.7", true},
		{"a mirror: its release, not its repository", "mirror.example.com/k8s/scheduler-plugins/kube-scheduler:v0.33.5",
			"registry.k8s.io/scheduler-plugins/controller:" + schedulerPluginsReleases[33], true},
		{"a tag of the release's minor: the operator's release of it", "registry.example/scheduler-plugins/kube-scheduler:v0.34.0-evil",
			"registry.k8s.io/scheduler-plugins/controller:v0.34.7", true},
		{"a release the table does not know", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.29.1", newest, false},
		{"a digest", "registry.k8s.io/scheduler-plugins/kube-scheduler@sha256:" + sha256Hex, newest, false},
		{"Kubernetes' own", "registry.k8s.io/kube-scheduler:v1.35.0", newest, false},
		{"a build of one's own", "example.com/my-scheduler:latest", newest, false},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			cr := &v1.SecondaryScheduler{Spec: v1.SecondarySchedulerSpec{SchedulerImage: test.scheduler}}
			got, known := PluginControllerImage(SchedulerImage(cr, 35))
			if got != test.want || known != test.known {
				t.Errorf("PluginControllerImage(%s) = %s, %v; want %s, %v", test.scheduler, got, known, test.want, test.known)
			}
		})
	}
	got, known := PluginControllerImage(SchedulerImage(&v1.SecondaryScheduler{}, 34))
	if want := "registry.k8s.io/scheduler-plugins/controller:" + schedulerPluginsReleases[34]; got != want || !known {
		t.Errorf("for the default image on 1.34: %s, %v; want %s", got, known, want)
	}
}

const sha256Hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// One controller of the newest release asked for; a value no release of the operator's
// has (an annotation anyone who may edit the Deployment may write) is never run.
func TestChoosePluginControllerImage(t *testing.T) {
	release := func(minor int) string {
		return "registry.k8s.io/scheduler-plugins/controller:" + schedulerPluginsReleases[minor]
	}
	tests := []struct {
		name   string
		images []string
		want   string
	}{
		{"none", nil, ""},
		{"the newest release, whatever the order", []string{release(35), release(30), release(34)}, release(35)},
		{"an older release alone", []string{release(31)}, release(31)},
		{"an image of someone's choosing: the newest release instead", []string{"evil.example/controller:v0.35.7", release(31)}, release(newestKnownMinor)},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			if got := ChoosePluginControllerImage(test.images); got != test.want {
				t.Errorf("got %s, want %s", got, test.want)
			}
		})
	}
}

// Every release the operator knows has its controller, of the same tag.
func TestPluginControllerReleaseImages(t *testing.T) {
	schedulers, controllers := SchedulerPluginsReleaseImages(), PluginControllerReleaseImages()
	if len(controllers) != len(schedulers) {
		t.Fatalf("%d controller images for %d releases", len(controllers), len(schedulers))
	}
	for i, scheduler := range schedulers {
		if want := strings.Replace(scheduler, "/kube-scheduler:", "/controller:", 1); controllers[i] != want {
			t.Errorf("the controller of %s is %s, want %s", scheduler, controllers[i], want)
		}
	}
}
