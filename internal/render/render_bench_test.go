package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// BenchmarkRender measures one reconcile's rendering, which runs on every event of a
// SecondaryScheduler or one of its objects.
func BenchmarkRender(b *testing.B) {
	cases := map[string]struct {
		cr    *v1.SecondaryScheduler
		facts Facts
	}{
		"BinPacking": {secondaryScheduler("packer", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": 2, "memory": 1}}
		}), Facts{KubernetesMinor: 34}},
		"Custom": {secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile, cr.Spec.SchedulerConfig = nil, "cm"
		}), Facts{KubernetesMinor: 34, CustomConfig: []byte(customConfig)}},
	}
	for name, c := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(c.cr, c.facts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseUserConfig measures the strict check of a user's configuration.
func BenchmarkParseUserConfig(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schedconfig.Parse([]byte(customConfig), "image-locality", "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
