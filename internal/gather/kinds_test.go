package gather

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestOneLookPerGroupVersion checks that kinds of one group and version cost one discovery
// request for as long as one look is used, a group and version not served included, and
// that DiscoveredKinds alone asks every time.
func TestOneLookPerGroupVersion(t *testing.T) {
	discovery := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "scheduling.x-k8s.io/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "podgroups", Kind: "PodGroup"}, {Name: "podgroups/status", Kind: "PodGroup"},
			{Name: "elasticquotas", Kind: "ElasticQuota"}},
	}}}}
	asks := []struct {
		kind   schema.GroupVersionKind
		served bool
	}{
		{schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}, true},
		{schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "ElasticQuota"}, true},
		{schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "Workload"}, false},
		{schema.GroupVersionKind{Group: "topology.node.k8s.io", Version: "v1alpha2", Kind: "NodeResourceTopology"}, false},
		{schema.GroupVersionKind{Group: "topology.node.k8s.io", Version: "v1alpha2", Kind: "NodeResourceTopology"}, false},
	}
	for _, tt := range []struct {
		name     string
		kinds    ServedKinds
		requests int
	}{
		{"one look", OneLookPerGroupVersion(DiscoveredKinds(discovery)), 2},
		{"a look each time", DiscoveredKinds(discovery), len(asks)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			discovery.ClearActions()
			for _, ask := range asks {
				served, err := tt.kinds.Serves(ask.kind)
				if err != nil || served != ask.served {
					t.Errorf("Serves(%s) = %t, %v; want %t", ask.kind, served, err, ask.served)
				}
			}
			if got := len(discovery.Actions()); got != tt.requests {
				t.Errorf("%d discovery requests, want %d", got, tt.requests)
			}
		})
	}
}
