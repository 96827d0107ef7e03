package v1

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

// decoders are the ways a SecondaryScheduler reaches the operator: the API machinery's
// codec (what the cache and clients decode with), and the unstructured converter.
var decoders = map[string]func(t testing.TB, data []byte) *SecondaryScheduler{
	"codec": func(t testing.TB, data []byte) *SecondaryScheduler {
		scheme := k8sruntime.NewScheme()
		if err := AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		object, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode(data, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return object.(*SecondaryScheduler)
	},
	"unstructured": func(t testing.TB, data []byte) *SecondaryScheduler {
		object := &unstructured.Unstructured{}
		if err := object.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		cr := &SecondaryScheduler{}
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(object.Object, cr); err != nil {
			t.Fatal(err)
		}
		return cr
	},
}

// TestHostileStoredQuantityIsNotParsed: a spec stored before the CRD refused hostile
// quantities is decoded cheaply and empty, saying which field it is; the operator runs
// nothing from it.
func TestHostileStoredQuantityIsNotParsed(t *testing.T) {
	tests := []struct {
		name, spec, wantField string
	}{
		{"default requests", `{"profile":{"type":"TargetLoadPacking","targetLoadPacking":{"defaultRequests":{"cpu":"1e-99999999"}}}}`,
			"profile.targetLoadPacking.defaultRequests.cpu"},
		{"the scheduler's resources", `{"resources":{"limits":{"memory":"1e-99999999"}}}`, "resources.limits.memory"},
		{"an extender's resources", `{"extenders":[{"name":"x","container":{"image":"e","port":8888,"resources":{"requests":{"cpu":"1E-9999999"}}}}]}`,
			"extenders[0].container.resources.requests.cpu"},
	}
	for _, tt := range tests {
		for decoder, decode := range decoders {
			t.Run(tt.name+" by "+decoder, func(t *testing.T) {
				data := []byte(`{"apiVersion":"operator.secondary-scheduler.io/v1","kind":"SecondaryScheduler","metadata":{"name":"x","namespace":"y"},"spec":` + tt.spec + `}`)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cr := decode(t, data)
				runtime.ReadMemStats(&after)
				// Parsing 1e-99999999 allocates about 400 MB.
				if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 16<<20 {
					t.Errorf("decoding allocated %d bytes, want under 16 MiB", allocated)
				}
				var quantity *QuantityError
				if err := cr.Spec.Undecodable(); !errors.As(err, &quantity) || quantity.Field != tt.wantField {
					t.Fatalf("Undecodable() = %v, want a QuantityError of %s", err, tt.wantField)
				}
				if !cmp.Equal(cr.Spec.DeepCopy().Undecodable(), cr.Spec.Undecodable()) {
					t.Error("a copy of the spec forgets why it was not decoded")
				}
				if cr.Spec.Profile != nil || cr.Spec.Extenders != nil || cr.Spec.Resources != nil {
					t.Errorf("the spec was decoded all the same: %+v", cr.Spec)
				}
			})
		}
	}
}

// TestSpecDecodesAsBefore: a spec within bounds decodes as the API machinery's own
// decoding would, by each way.
func TestSpecDecodesAsBefore(t *testing.T) {
	spec := SecondarySchedulerSpec{SchedulerImage: "example.com/s:v1",
		Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
		Extenders: []Extender{{Name: "x", Container: &ExtenderContainer{Image: "e", Port: 8888}}},
		Profile:   &Profile{Type: TargetLoadPackingProfile, TargetLoadPacking: &TargetLoadPackingArgs{DefaultRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
	}
	cr := &SecondaryScheduler{Spec: spec}
	cr.APIVersion, cr.Kind = GroupVersion.String(), "SecondaryScheduler"
	cr.Name, cr.Namespace = "x", "y"
	data, err := yaml.Marshal(cr)
	if err != nil {
		t.Fatal(err)
	}
	data, err = yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	for decoder, decode := range decoders {
		t.Run(decoder, func(t *testing.T) {
			got := decode(t, data)
			if err := got.Spec.Undecodable(); err != nil {
				t.Fatalf("Undecodable() = %v", err)
			}
			if diff := cmp.Diff(spec, got.Spec, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("decoded spec differs (-want +got):\n%s", diff)
			}
		})
	}
	if !strings.Contains(string(data), `"defaultRequests":{"cpu":"100m"}`) {
		t.Errorf("the test's data lacks the quantity it means to decode: %s", data)
	}
}

// BenchmarkDecodeSecondaryScheduler is what the operator's cache spends on one resource
// it lists or watches: one within bounds, and one stored with a hostile quantity, which
// costs no more (parsed, that one took about 400 MB).
func BenchmarkDecodeSecondaryScheduler(b *testing.B) {
	decode := decoders["codec"]
	for name, spec := range map[string]string{
		"within-bounds":    `{"profile":{"type":"TargetLoadPacking","targetLoadPacking":{"defaultRequests":{"cpu":"100m","memory":"1Gi"}}}}`,
		"hostile-quantity": `{"profile":{"type":"TargetLoadPacking","targetLoadPacking":{"defaultRequests":{"cpu":"1e-99999999","memory":"1Gi"}}}}`,
	} {
		data := []byte(`{"apiVersion":"operator.secondary-scheduler.io/v1","kind":"SecondaryScheduler","metadata":{"name":"x","namespace":"y"},"spec":` + spec + `}`)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				decode(b, data)
			}
		})
	}
}
