package main

import (
	"slices"
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// The referenced configuration is one the operator accepts, and claims the scheduler's
// own name: anything else and no scheduler would turn Available.
func TestReferencedConfigIsValid(t *testing.T) {
	for _, i := range []int{0, 42, referencesCount - 1} {
		name := referenceName(i)
		config, err := schedconfig.Parse([]byte(referencedConfig(name)), "", "ConfigMap "+referencesNamespace+"/"+name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if names := schedconfig.ProfileNames(config); !slices.Equal(names, []string{name}) {
			t.Errorf("%s: the configuration claims %v", name, names)
		}
	}
	if referenceName(7) != "ref-007" {
		t.Errorf("referenceName(7) = %q", referenceName(7))
	}
}

func TestOpenWatches(t *testing.T) {
	metrics, err := parseMetrics(`# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 503
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",verb="WATCH",version="v1"} 4
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 7
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="exec",verb="CONNECT",version="v1"} 1
go_goroutines 1234
`)
	if err != nil {
		t.Fatal(err)
	}
	for resource, want := range map[string]float64{"configmaps": 507, "pods": 7, "secrets": 0, "": 514} {
		if got := openWatches(metrics, resource); got != want {
			t.Errorf("openWatches(%q) = %v, want %v", resource, got, want)
		}
	}
}
