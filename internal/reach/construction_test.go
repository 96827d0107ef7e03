package reach_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reach"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// filler sets every exported field of a value, recursively, to a value of its own: each
// string a distinct one, each list and map one element, each pointer an allocated value.
// A field added to the API later is filled without editing the test.
type filler struct{ next int }

func (f *filler) fill(value reflect.Value, depth int) {
	if depth > 12 {
		return // corev1's recursive types (none reach here today) stop somewhere
	}
	switch value.Kind() {
	case reflect.Pointer:
		value.Set(reflect.New(value.Type().Elem()))
		f.fill(value.Elem(), depth+1)
	case reflect.Struct:
		if value.Type() == reflect.TypeFor[metav1.Duration]() {
			value.Set(reflect.ValueOf(metav1.Duration{Duration: time.Minute}))
			return
		}
		for i := range value.NumField() {
			if value.Type().Field(i).IsExported() {
				f.fill(value.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		value.Set(reflect.MakeSlice(value.Type(), 1, 1))
		f.fill(value.Index(0), depth+1)
	case reflect.Map:
		value.Set(reflect.MakeMap(value.Type()))
		key, element := reflect.New(value.Type().Key()).Elem(), reflect.New(value.Type().Elem()).Elem()
		f.fill(key, depth+1)
		f.fill(element, depth+1)
		value.SetMapIndex(key, element)
	case reflect.String:
		f.next++
		value.SetString(fmt.Sprintf("value-%d", f.next))
	case reflect.Bool:
		value.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		value.SetInt(1)
	}
}

// everyField is a SecondaryScheduler of profile type whose every spec field is set.
func everyField(profile v1.ProfileType) *v1.SecondaryScheduler {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "every-field", UID: "uid-1"}}
	(&filler{}).fill(reflect.ValueOf(&cr.Spec).Elem(), 0)
	// Values the renderer chooses by, which must be among those it knows.
	cr.Spec.ManagementState = v1.Managed
	cr.Spec.Profile.Type = profile
	cr.Spec.Profile.Metrics.Provider = v1.PrometheusProvider
	cr.Spec.Profile.Metrics.WatcherAddress = ""
	cr.Spec.Profile.Metrics.Address = "https://prometheus.example:9090"
	cr.Spec.Topology.Mode = v1.HighlyAvailable
	cr.Spec.LogLevel, cr.Spec.OperatorLogLevel = v1.Normal, v1.Normal
	cr.Spec.Routing = nil // routing reaches no pod of the scheduler's
	cr.Spec.NodePool.MatchExpressions[0].Operator = metav1.LabelSelectorOpIn
	cr.Spec.Profile.LoadVariationRiskBalancing.SafeVarianceMargin = "1"
	cr.Spec.Profile.LoadVariationRiskBalancing.SafeVarianceSensitivity = "1"
	cr.Spec.Profile.LowRiskOverCommitment.RiskLimitWeights = map[corev1.ResourceName]v1.RiskWeight{corev1.ResourceCPU: "0.5"}
	cr.Spec.Profile.TargetLoadPacking.DefaultRequestsMultiplier = "1.5"
	cr.Spec.Descheduling.Mode = v1.DeschedulingDryRun
	cr.Spec.Descheduling.Interval = &metav1.Duration{Duration: v1.DeschedulingWindow}
	cr.Spec.Profile.TargetLoadPacking.TargetUtilization = ptr.To[int32](50)
	return cr
}

// valuesAt are the strings at sink's path in spec, following every element of every list.
func valuesAt(spec any, sink reach.Sink) []string {
	values := []reflect.Value{reflect.ValueOf(spec)}
	for _, segment := range sink.Path {
		var next []reflect.Value
		for _, value := range values {
			field, ok := fieldByJSONName(value, segment.Field)
			if !ok {
				continue
			}
			if segment.List {
				for i := range field.Len() {
					next = append(next, field.Index(i))
				}
			} else {
				next = append(next, field)
			}
		}
		values = next
	}
	var found []string
	for _, value := range values {
		for value.Kind() == reflect.Pointer && !value.IsNil() {
			value = value.Elem()
		}
		if value.Kind() == reflect.String && value.String() != "" {
			found = append(found, value.String())
		}
	}
	return found
}

// fieldByJSONName is the field of struct value (or what it points to) whose JSON name is
// name, looking into inlined fields too.
func fieldByJSONName(value reflect.Value, name string) (reflect.Value, bool) {
	for value.Kind() == reflect.Pointer {
		if value.IsNil() {
			return reflect.Value{}, false
		}
		value = value.Elem()
	}
	if value.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	for i := range value.NumField() {
		field := value.Type().Field(i)
		tag, options, _ := strings.Cut(field.Tag.Get("json"), ",")
		if tag == name {
			return value.Field(i), true
		}
		if (field.Anonymous && tag == "") || strings.Contains(options, "inline") {
			if found, ok := fieldByJSONName(value.Field(i), name); ok {
				return found, true
			}
		}
	}
	return reflect.Value{}, false
}

// reached is what a rendered pod template brings into its containers from outside.
type reached struct {
	images              []string
	secrets, configMaps []string
}

func reachedBy(pod corev1.PodSpec) reached {
	var found reached
	containers := slices.Concat(pod.InitContainers, pod.Containers)
	for _, ephemeral := range pod.EphemeralContainers {
		containers = append(containers, corev1.Container(ephemeral.EphemeralContainerCommon))
	}
	for _, container := range containers {
		found.images = append(found.images, container.Image)
		for _, env := range container.Env {
			if from := env.ValueFrom; from != nil && from.SecretKeyRef != nil {
				found.secrets = append(found.secrets, from.SecretKeyRef.Name)
			}
			if from := env.ValueFrom; from != nil && from.ConfigMapKeyRef != nil {
				found.configMaps = append(found.configMaps, from.ConfigMapKeyRef.Name)
			}
		}
		for _, from := range container.EnvFrom {
			if from.SecretRef != nil {
				found.secrets = append(found.secrets, from.SecretRef.Name)
			}
			if from.ConfigMapRef != nil {
				found.configMaps = append(found.configMaps, from.ConfigMapRef.Name)
			}
		}
	}
	for _, volume := range pod.Volumes {
		if volume.Secret != nil {
			found.secrets = append(found.secrets, volume.Secret.SecretName)
		}
		if volume.ConfigMap != nil {
			found.configMaps = append(found.configMaps, volume.ConfigMap.Name)
		}
		if volume.Projected != nil {
			for _, source := range volume.Projected.Sources {
				if source.Secret != nil {
					found.secrets = append(found.secrets, source.Secret.Name)
				}
				if source.ConfigMap != nil {
					found.configMaps = append(found.configMaps, source.ConfigMap.Name)
				}
			}
		}
	}
	return found
}

// TestEveryImageAndReferenceOfThePodIsASink renders a SecondaryScheduler whose every
// field is set, for each profile, and checks that each image and each Secret and
// ConfigMap its scheduler's pod holds is either the operator's own (an object it renders,
// the image it chooses, the cluster CA every pod gets) or the value of a place of the
// spec that internal/reach found, and so that the admission policy checks. A field that
// brings something into the pod past reach fails here.
func TestEveryImageAndReferenceOfThePodIsASink(t *testing.T) {
	sinks, err := reach.Sinks()
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range []v1.ProfileType{v1.BinPackingProfile, v1.TargetLoadPackingProfile,
		v1.LoadVariationRiskBalancingProfile, v1.LowRiskOverCommitmentProfile} {
		t.Run(string(profile), func(t *testing.T) {
			cr := everyField(profile)
			ofSpec := map[reach.Kind][]string{}
			for _, sink := range sinks {
				ofSpec[sink.Kind] = append(ofSpec[sink.Kind], valuesAt(cr.Spec, sink)...)
			}
			facts := render.Facts{KubernetesMinor: 37, PlacementNodes: 1, MetricsToken: "token",
				TrustedCA: &render.TrustedCA{ConfigMap: cr.Spec.Profile.Metrics.CABundle.Name, Key: cr.Spec.Profile.Metrics.CABundle.Key, Hash: "h"}}
			result, err := render.Render(cr, facts)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			ours := map[string][]string{}
			pods := map[string]corev1.PodSpec{}
			for _, object := range result.Objects {
				ours[object.GetKind()] = append(ours[object.GetKind()], object.GetName())
				if object.GetKind() == "Deployment" {
					deployment := &appsv1.Deployment{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, deployment); err != nil {
						t.Fatal(err)
					}
					pods[deployment.Name] = deployment.Spec.Template.Spec
				}
			}
			if _, ok := pods[render.WorkloadName(cr)]; !ok || len(pods) < 2 {
				t.Fatalf("Deployments %v rendered: the scheduler's or the descheduler's is missing, so this test checks less than it should", slices.Sorted(maps.Keys(pods)))
			}
			// The images the operator chooses itself, which no field of the spec names.
			chosen := []string{render.DefaultDeschedulerImage}
			for name, pod := range pods {
				found := reachedBy(pod)
				scheduler := name == render.WorkloadName(cr)
				if scheduler && len(found.images) < 2 {
					t.Errorf("the pod has images %v: the extender container of the fixture is missing, so this test checks less than it should", found.images)
				}
				for _, image := range found.images {
					if !slices.Contains(ofSpec[reach.Image], image) && !slices.Contains(chosen, image) {
						t.Errorf("the pod runs image %q, which no place of the spec that reach found holds: add its field to what reach finds", image)
					}
				}
				check := func(kind reach.Kind, names []string, system ...string) {
					for _, name := range names {
						if !slices.Contains(ofSpec[kind], name) && !slices.Contains(ours[string(kind)], name) && !slices.Contains(system, name) {
							t.Errorf("the pod reads %s %q, which is neither the operator's nor at a place of the spec that reach found", kind, name)
						}
					}
				}
				check(reach.Secret, found.secrets)
				check(reach.ConfigMap, found.configMaps, "kube-root-ca.crt")
				if scheduler && len(found.secrets)+len(found.configMaps) < 3 {
					t.Errorf("the pod reads Secrets %v and ConfigMaps %v: the fixture's TLS and CA are missing, so this test checks less than it should", found.secrets, found.configMaps)
				}
			}
		})
	}
}

// TestSinksOfTheAPI pins what reach finds today, each with its check: a change here is a
// change of what admission checks, to be read in review.
func TestSinksOfTheAPI(t *testing.T) {
	sinks, err := reach.Sinks()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(sinks))
	for _, sink := range sinks {
		got = append(got, fmt.Sprintf("%s %s %s", sink, sink.Kind, sink.Check))
	}
	want := []string{
		"spec.schedulerConfig ConfigMap AuthorMayGet",
		"spec.schedulerImage image AllowedImage",
		"spec.profile.metrics.tokenSecretRef.name Secret AuthorMayGet",
		"spec.profile.metrics.caBundle.name ConfigMap AuthorMayGet",
		"spec.extenders[].container.image image AllowedImage",
		"spec.extenders[].container.env[].valueFrom.secretKeyRef.name Secret Refused",
		"spec.extenders[].container.env[].valueFrom.configMapKeyRef.name ConfigMap Refused",
		"spec.extenders[].tls.caBundle.configMap.name ConfigMap ConsentLabel",
		"spec.extenders[].tls.caBundle.secret.name Secret ConsentLabel",
		"spec.extenders[].tls.clientCertificateSecretRef.name Secret ConsentLabel",
	}
	if !slices.Equal(got, want) {
		t.Errorf("sinks:\n got %q\nwant %q", got, want)
	}
}

// TestOfRefusesWhatCannotBeChecked: a reference inside a list that no consent label
// covers would need an authorization check per element, more than the API server's CEL
// cost allows; an unnamed LocalObjectReference says neither kind. Both fail Of.
func TestOfRefusesWhatCannotBeChecked(t *testing.T) {
	type listed struct {
		Refs []struct {
			TokenSecretRef corev1.LocalObjectReference `json:"tokenSecretRef"`
		} `json:"refs"`
	}
	type unnamed struct {
		Target *corev1.LocalObjectReference `json:"target"`
	}
	type mapped struct {
		ByName map[string]v1.SecretKeyReference `json:"byName"`
	}
	for name, spec := range map[string]reflect.Type{
		"a reference in a list": reflect.TypeFor[listed](), "an unnamed reference": reflect.TypeFor[unnamed](),
		"a reference in a map": reflect.TypeFor[mapped](),
	} {
		if _, err := reach.Of(spec); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
}
