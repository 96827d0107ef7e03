package promdiscovery

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// apiServerServing is a discovery client of an API server serving groupVersions.
func apiServerServing(groupVersions ...string) *fake.FakeDiscovery {
	served := &fake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	for _, groupVersion := range groupVersions {
		served.Resources = append(served.Resources, &metav1.APIResourceList{GroupVersion: groupVersion})
	}
	return served
}

// TestDefaultsSearchOpenShiftMonitoringOnlyOnOpenShift: off OpenShift nothing reserves the
// name openshift-monitoring, so whoever may create namespaces could create it, put a
// Service there and receive schedulers' metrics tokens; it is searched by default only
// where the API server serves OpenShift's config.openshift.io.
func TestDefaultsSearchOpenShiftMonitoringOnlyOnOpenShift(t *testing.T) {
	tests := []struct {
		name              string
		served            []string
		operatorNamespace string
		want              []string
	}{
		{"OpenShift", []string{"v1", "apps/v1", "config.openshift.io/v1", "route.openshift.io/v1"}, "secondary-scheduler-operator",
			[]string{"openshift-monitoring", "secondary-scheduler-operator"}},
		{"OpenShift, outside a pod", []string{"v1", "config.openshift.io/v1"}, "", []string{"openshift-monitoring"}},
		{"OpenShift, the operator in openshift-monitoring", []string{"config.openshift.io/v1"}, "openshift-monitoring", []string{"openshift-monitoring"}},
		{"Kubernetes", []string{"v1", "apps/v1", "monitoring.coreos.com/v1"}, "secondary-scheduler-operator", []string{"secondary-scheduler-operator"}},
		// A group that merely looks like OpenShift's is not its configuration API.
		{"Kubernetes with an OpenShift-like group", []string{"v1", "route.openshift.io/v1", "config.openshift.io.example.com/v1"}, "operators",
			[]string{"operators"}},
		{"Kubernetes, outside a pod", []string{"v1"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onOpenShift, err := IsOpenShift(context.Background(), apiServerServing(tt.served...))
			if err != nil {
				t.Fatal(err)
			}
			got := Defaults(onOpenShift, tt.operatorNamespace)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Defaults (-want +got):\n%s", diff)
			}
			if !onOpenShift && slices.Contains(got, openShiftMonitoring) {
				t.Errorf("off OpenShift, the defaults %v search %s, a name anyone allowed to create namespaces may take", got, openShiftMonitoring)
			}
		})
	}
}

// TestIsOpenShiftSaysWhyItCannotTell: an API server that cannot list its groups leaves the
// question open, and the caller is told, rather than guessing either way.
func TestIsOpenShiftSaysWhyItCannotTell(t *testing.T) {
	served := apiServerServing("config.openshift.io/v1")
	served.AddReactor("get", "group", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if onOpenShift, err := IsOpenShift(context.Background(), served); err == nil {
		t.Fatalf("IsOpenShift = %v without an error, though the API server's groups could not be listed", onOpenShift)
	}
}

// TestDefaultsDoNotShareDefaultNamespaces: a caller appending to the defaults it got must
// not change the next caller's.
func TestDefaultsDoNotShareDefaultNamespaces(t *testing.T) {
	defaults := Defaults(true, "")
	defaults[0] = "changed"
	if DefaultNamespaces[0] != openShiftMonitoring {
		t.Fatalf("changing the defaults returned changed DefaultNamespaces: %v", DefaultNamespaces)
	}
}
