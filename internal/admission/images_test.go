package admission_test

import (
	"errors"
	"testing"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
)

// TestCheckImages: the operator's own check refuses every image of the spec, wherever it
// is, that its allowed images do not list; the default image (no schedulerImage) passes.
func TestCheckImages(t *testing.T) {
	withExtender := func(image string) *v1.SecondarySchedulerSpec {
		return &v1.SecondarySchedulerSpec{Extenders: []v1.Extender{{Name: "ok"}, {Name: "x", Container: &v1.ExtenderContainer{Image: image}}}}
	}
	tests := []struct {
		name     string
		allowed  []string
		spec     *v1.SecondarySchedulerSpec
		wantPath string
	}{
		{"the default image", []string{"example.com/team/"}, &v1.SecondarySchedulerSpec{}, ""},
		{"an allowed scheduler image", []string{"example.com/team/"}, &v1.SecondarySchedulerSpec{SchedulerImage: "example.com/team/s:v1"}, ""},
		{"a scheduler image not allowed", []string{"example.com/team/"}, &v1.SecondarySchedulerSpec{SchedulerImage: "evil.example.com/s:v1"}, "spec.schedulerImage"},
		{"an extender's image not allowed", []string{"example.com/team/"}, withExtender("evil.example.com/steal:latest"), "spec.extenders[].container.image"},
		{"an extender's allowed image", []string{"example.com/team/"}, withExtender("example.com/team/extender:v1"), ""},
		{"any image while none is listed", nil, withExtender("evil.example.com/steal:latest"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policies, err := admission.Desired("operators", tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			err = policies.CheckImages(tt.spec)
			var disallowed *admission.DisallowedImageError
			switch {
			case tt.wantPath == "" && err != nil:
				t.Errorf("CheckImages = %v, want nil", err)
			case tt.wantPath != "" && !errors.As(err, &disallowed):
				t.Errorf("CheckImages = %v, want a DisallowedImageError at %s", err, tt.wantPath)
			case tt.wantPath != "" && disallowed.Path != tt.wantPath:
				t.Errorf("refused at %s, want %s", disallowed.Path, tt.wantPath)
			}
		})
	}
}
