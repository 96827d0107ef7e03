package reach_test

import (
	"slices"
	"testing"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reach"
)

// TestValuesAtEverySink: the values of a sink are what the spec holds there, through each
// element of a list, nothing where a pointer on the path is nil, nothing empty.
func TestValuesAtEverySink(t *testing.T) {
	spec := &v1.SecondarySchedulerSpec{
		SchedulerImage:  "example.com/scheduler:v1",
		SchedulerConfig: "own-config",
		Extenders: []v1.Extender{
			{Name: "first", Container: &v1.ExtenderContainer{Image: "example.com/first:v1"}},
			{Name: "remote"},
			{Name: "second", Container: &v1.ExtenderContainer{Image: "example.com/second:v1"}},
		},
	}
	sinks, err := reach.Sinks()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, sink := range sinks {
		if values := sink.Values(spec); len(values) > 0 {
			got[sink.String()] = values
		}
	}
	want := map[string][]string{
		"spec.schedulerImage":              {"example.com/scheduler:v1"},
		"spec.schedulerConfig":             {"own-config"},
		"spec.extenders[].container.image": {"example.com/first:v1", "example.com/second:v1"},
	}
	if len(got) != len(want) {
		t.Errorf("values at %d sinks, want %d: %v", len(got), len(want), got)
	}
	for path, values := range want {
		if !slices.Equal(got[path], values) {
			t.Errorf("values at %s = %v, want %v", path, got[path], values)
		}
	}
	if values := sinks[0].Values(&v1.SecondarySchedulerSpec{}); len(values) != 0 {
		t.Errorf("an empty spec holds %v at %s", values, sinks[0])
	}
}
